"""pyribs on a gymnasium task for ``benchmarks/quality_diversity.py`` (run in its own venv:
ribs, gymnasium[mujoco]): MAP-Elites (IsoLineEmitter) or CMA-MAE (separable CMA-ES emitters
ranked by improvement, archive learning rate 0.01) over the final x position (a MuJoCo
task's ``info["x_position"]``, or the first entry of the final observation: CartPole's cart
position), each policy evaluated one at a time in one env, as pyribs' users do; a 64-64
tanh MLP in numpy (its outputs squashed by tanh into a Box's actions, or their argmax for a
Discrete space). ``--seed`` seeds the first networks, the archives' and emitters' draws and
the episodes. Prints one JSON line: evaluations, seconds, QD-score and coverage per
generation (``benchmarks/parity`` reads it too)."""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
from ribs.archives import GridArchive
from ribs.emitters import EvolutionStrategyEmitter, IsoLineEmitter
from ribs.schedulers import Scheduler


class MLP:
    """obs -> 64 -> 64 -> actions, tanh hidden layers, tanh of the outputs as the action."""

    def __init__(self, observations: int, actions: int, hidden=(64, 64)) -> None:
        self.shapes = []
        widths = [observations, *hidden, actions]
        for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
            self.shapes += [(fan_in, fan_out), (fan_out,)]
        self.size = sum(int(np.prod(shape)) for shape in self.shapes)

    def initial(self, rng: np.random.Generator) -> np.ndarray:
        """PyTorch's nn.Linear initialisation, flattened."""
        parts = []
        for weight, bias in zip(self.shapes[0::2], self.shapes[1::2], strict=True):
            bound = 1 / np.sqrt(weight[0])  # 1/sqrt(fan_in) for the weight and the bias
            parts += [rng.uniform(-bound, bound, weight).ravel(), rng.uniform(-bound, bound, bias)]
        return np.concatenate(parts)

    def act(self, params: np.ndarray, observation: np.ndarray) -> np.ndarray:
        hidden, offset = observation, 0
        layers = len(self.shapes) // 2
        for layer in range(layers):
            (fan_in, fan_out), _ = self.shapes[2 * layer], self.shapes[2 * layer + 1]
            weight = params[offset : offset + fan_in * fan_out].reshape(fan_in, fan_out)
            offset += fan_in * fan_out
            bias = params[offset : offset + fan_out]
            offset += fan_out
            hidden = hidden @ weight + bias
            hidden = np.tanh(hidden)  # hidden layers, and the action's squash
        return hidden


def evaluate(
    env, policy: MLP, params: np.ndarray, seed: int, discrete: bool
) -> tuple[float, float, int]:
    """One episode: its return, final x position and length."""
    observation, _ = env.reset(seed=seed)
    total, steps, info = 0.0, 0, {}
    while True:
        outputs = policy.act(params, observation)
        action = int(np.argmax(outputs)) if discrete else outputs
        observation, reward, terminated, truncated, info = env.step(action)
        total += reward
        steps += 1
        if terminated or truncated:
            position = info["x_position"] if "x_position" in info else observation[0]
            return total, float(position), steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=["map_elites", "cma_mae"], default="map_elites")
    parser.add_argument("--env", default="HalfCheetah-v4")
    parser.add_argument("--episode-steps", type=int, default=200)
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--emitter-batch", type=int, default=16, help="CMA-MAE")
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--low", type=float, default=-5.0)
    parser.add_argument("--high", type=float, default=5.0)
    parser.add_argument("--offset", type=float, default=-200.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    env = gym.make(args.env, max_episode_steps=args.episode_steps)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    actions = env.action_space.n if discrete else env.action_space.shape[0]
    policy = MLP(env.observation_space.shape[0], actions)
    rng = np.random.default_rng(args.seed)
    result = GridArchive(
        solution_dim=policy.size, dims=[args.cells], ranges=[(args.low, args.high)],
        qd_score_offset=args.offset, seed=args.seed,
    )  # fmt: skip
    if args.algo == "map_elites":
        archive = result
        initial = np.stack([policy.initial(rng) for _ in range(args.batch)])
        emitters = [
            IsoLineEmitter(
                archive,
                iso_sigma=0.005,
                line_sigma=0.05,
                initial_solutions=initial,
                batch_size=args.batch,
                seed=args.seed,
            )  # fmt: skip
        ]
        scheduler = Scheduler(archive, emitters)
    else:
        archive = GridArchive(
            solution_dim=policy.size, dims=[args.cells], ranges=[(args.low, args.high)],
            learning_rate=0.01, threshold_min=args.offset, qd_score_offset=args.offset,
            seed=args.seed,
        )  # fmt: skip
        emitters = [
            EvolutionStrategyEmitter(
                archive,
                x0=policy.initial(rng),
                sigma0=0.05,
                ranker="imp",
                es="sep_cma_es",
                batch_size=args.emitter_batch,
                seed=args.seed * 1000 + index,
            )  # fmt: skip
            for index in range(args.batch // args.emitter_batch)
        ]
        scheduler = Scheduler(archive, emitters, result_archive=result)
    curve, evaluations, steps = [], 0, 0
    started = time.perf_counter()
    for generation in range(args.generations):
        solutions = scheduler.ask()
        objectives, measures = [], []
        for index, params in enumerate(solutions):
            seed = args.seed * 100_000_000 + generation * 10_000 + index
            score, x, length = evaluate(env, policy, params, seed, discrete)
            objectives.append(score)
            measures.append([x])
            steps += length
        scheduler.tell(np.asarray(objectives), np.asarray(measures))
        evaluations += len(solutions)
        stats = result.stats
        curve.append(
            {
                "evaluations": evaluations,
                "qd_score": float(stats.qd_score),
                "coverage": float(stats.coverage),
                "seconds": time.perf_counter() - started,
            }
        )
    seconds = time.perf_counter() - started
    print(
        json.dumps({"evaluations": evaluations, "steps": steps, "seconds": seconds, "curve": curve})
    )


if __name__ == "__main__":
    main()
