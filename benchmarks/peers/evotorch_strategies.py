"""EvoTorch 0.6.1's CMA-ES, PGPE (ClipUp) or SNES on a gymnasium task, for
``benchmarks/strategies.py`` (run in EvoTorch's own venv: ``--evotorch-python``).

The same policy as neuroplug's (a 64-64 tanh MLP, observation normalisation), EvoTorch's
``GymNE`` with ``num_actors`` Ray actors, the same population. It trains until the center
solves the task (``--solve``: its mean return over ``--eval-episodes`` after every
generation), or a frame or time budget is spent, and prints one JSON line per generation
and a summary line.

    /tmp/evotorch-venv/bin/python benchmarks/peers/evotorch_strategies.py \\
        --algo cma_es --env CartPole-v1 --solve 475
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from evotorch.algorithms import CMAES, PGPE, SNES
from evotorch.neuroevolution import GymNE

NETWORK = "Linear(obs_length, 64) >> Tanh() >> Linear(64, 64) >> Tanh() >> Linear(64, act_length)"


def searcher(name: str, problem: GymNE, popsize: int, sigma: float):
    """EvoTorch's strategy with the settings neuroplug's defaults mirror."""
    if name == "cma_es":
        return CMAES(problem, stdev_init=sigma, popsize=popsize or None)
    if name == "snes":
        return SNES(problem, stdev_init=sigma, popsize=popsize or None)
    if name == "pgpe":  # EvoTorch's MuJoCo example settings (and neuroplug's defaults)
        return PGPE(
            problem,
            popsize=popsize,
            center_learning_rate=0.01125,
            stdev_learning_rate=0.1,
            radius_init=0.27,
            optimizer="clipup",
            optimizer_config={"max_speed": 0.0225},
        )
    raise SystemExit(f"unknown --algo {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", required=True, choices=["cma_es", "snes", "pgpe"])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--popsize", type=int, default=0)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--frames", type=int, default=10**9)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--solve", type=float, default=None)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--eval-every", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    problem = GymNE(
        env=args.env,
        network=NETWORK,
        observation_normalization=True,
        num_actors=args.actors,
    )
    search = searcher(args.algo, problem, args.popsize, args.sigma)
    started = time.perf_counter()
    training = 0.0
    generation, evaluation, solved = 0, float("nan"), False
    while True:
        step_started = time.perf_counter()
        search.step()
        training += time.perf_counter() - step_started
        generation += 1
        frames = problem.interaction_count
        if generation % args.eval_every == 0 or frames >= args.frames:
            center = search.status["center"]
            evaluation = float(
                problem.run(center, num_episodes=args.eval_episodes)["cumulative_reward"]
            )
        elapsed = time.perf_counter() - started
        print(
            json.dumps(
                {
                    "generation": generation,
                    "frames": frames,
                    "elapsed": elapsed,
                    "training_seconds": training,
                    "population_mean": float(search.status["mean_eval"]),
                    "eval_return": evaluation,
                    "popsize": len(search.population),
                }
            ),
            flush=True,
        )
        solved = args.solve is not None and evaluation >= args.solve
        if solved or frames >= args.frames or elapsed >= args.seconds:
            break
    print(
        json.dumps(
            {
                "summary": True,
                "solved": solved,
                "generation": generation,
                "frames": problem.interaction_count,
                "elapsed": elapsed,
                "training_seconds": training,
                "eval_return": evaluation,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
