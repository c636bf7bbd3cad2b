"""EvoTorch's strategies for the parity suite (run in EvoTorch's own venv): the
:mod:`policy_shape` policy through ``GymNE`` (one episode per member, no observation
normalisation, no Ray actors: one thread, as every side), ``--generations`` of
``--population``; prints each generation as ``evaluations=..,
population_mean=.., env_steps=.., members=..``.

``population_mean`` is the mean return of every episode the generation played, as
neuroplug's ``return_mean``: for the elitist GA its re-evaluated parents and its children
(the survivors' mean, EvoTorch's ``population.evals`` after a step, is the better half of
those draws: a selected statistic, not what the generation did).

    python evotorch_search.py --algo snes --env CartPole-v1 --generations 40 --population 18
"""

from __future__ import annotations

import argparse

import gymnasium
import torch
from evotorch.algorithms import CMAES, PGPE, SNES, XNES, GeneticAlgorithm
from evotorch.decorators import pass_info
from evotorch.neuroevolution import GymNE
from evotorch.operators import GaussianMutation
from policy_shape import HIDDEN, initial_layers


@pass_info  # GymNE passes the task's sizes and spaces
class Policy(torch.nn.Module):
    """:func:`policy_shape.act` as a module (GymNE takes the argmax on a discrete task and
    clips to the box, which ``tanh * high`` already respects)."""

    def __init__(self, obs_length: int, act_length: int, act_space, **_) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(obs_length, HIDDEN)
        self.out = torch.nn.Linear(HIDDEN, act_length)
        high = getattr(act_space, "high", None)
        scale = torch.as_tensor(high, dtype=torch.float32) if high is not None else None
        self.register_buffer("scale", scale if scale is not None else torch.ones(act_length))
        self.squash = high is not None and getattr(act_space, "n", None) is None

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        out = self.out(torch.tanh(self.hidden(observations)))
        return torch.tanh(out) * self.scale if self.squash else out


def starting_point(env_name: str, seed: int) -> torch.Tensor:
    """:func:`policy_shape.initial_layers` in the order GymNE flattens :class:`Policy`
    (each ``Linear``'s ``(out, in)`` weight, then its bias)."""
    env = gymnasium.make(env_name)
    observations, space = env.observation_space.shape[0], env.action_space
    outputs = space.n if hasattr(space, "n") else space.shape[0]
    w0, b0, w1, b1 = initial_layers(observations, outputs, seed)
    flat = [torch.as_tensor(part, dtype=torch.float32).reshape(-1) for part in (w0.T, b0, w1.T, b1)]
    return torch.cat(flat)


def searcher(name: str, problem: GymNE, population: int, sigma: float, env_name: str, seed: int):
    """EvoTorch's algorithm for neuroplug's ``name``, at neuroplug's default settings,
    starting where neuroplug's does (:func:`starting_point`)."""
    center = starting_point(env_name, seed)
    if name == "es":  # OpenAI ES: fixed sigma, mirrored, centred ranks, Adam
        return PGPE(
            problem, popsize=population, center_learning_rate=0.01, stdev_learning_rate=0.0,
            stdev_init=sigma, optimizer="adam", ranking_method="centered", symmetric=True,
            center_init=center,
        )  # fmt: skip
    if name == "pgpe":  # ClipUp, EvoTorch's MuJoCo example settings (neuroplug's defaults)
        return PGPE(
            problem, popsize=population, center_learning_rate=0.01125,
            stdev_learning_rate=0.1, radius_init=0.27, optimizer="clipup",
            optimizer_config={"max_speed": 0.0225}, center_init=center,
        )  # fmt: skip
    if name == "snes":
        return SNES(problem, stdev_init=sigma, popsize=population, center_init=center)
    if name == "xnes":
        return XNES(problem, stdev_init=sigma, popsize=population, center_init=center)
    if name in ("cma_es", "sep_cma_es"):
        return CMAES(
            problem, stdev_init=sigma, popsize=population, separable=name == "sep_cma_es",
            center_init=center,
        )  # fmt: skip
    if name == "ga":
        mutation = GaussianMutation(problem, stdev=sigma)
        search = GeneticAlgorithm(problem, popsize=population, operators=[mutation], elitist=True)
        # Such et al.'s first generation, as neuroplug's: each member a fresh network
        # (EvoTorch's would all sit within +-1e-5 of zero).
        fresh = [
            starting_point(env_name, seed * 1_000_003 + member) for member in range(population)
        ]
        search.population.access_values()[:] = torch.stack(fresh)
        return search
    raise SystemExit(f"unknown --algo {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choices = ["es", "pgpe", "snes", "xnes", "cma_es", "sep_cma_es", "ga"]
    parser.add_argument("--algo", required=True, choices=choices)
    parser.add_argument("--env", required=True)
    parser.add_argument("--generations", type=int, required=True)
    parser.add_argument("--population", type=int, required=True)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="stop at this many env steps")
    arguments = parser.parse_args()
    torch.manual_seed(arguments.seed)
    torch.set_num_threads(1)
    problem = GymNE(env=arguments.env, network=Policy, num_episodes=1)
    search = searcher(
        arguments.algo,
        problem,
        arguments.population,
        arguments.sigma,
        arguments.env,
        arguments.seed,
    )
    played: list[torch.Tensor] = []  # every evaluation of the generation's step
    problem.after_eval_hook.append(lambda batch: played.append(batch.evals[:, 0].clone()))
    for _ in range(arguments.generations):
        before = problem.episode_count
        played.clear()
        search.step()
        mean = float(torch.cat(played).mean())
        print(
            f"evaluations={problem.episode_count}, population_mean={mean}, "
            f"env_steps={problem.interaction_count}, members={problem.episode_count - before}",
            flush=True,
        )
        if arguments.steps and problem.interaction_count >= arguments.steps:
            break


if __name__ == "__main__":
    main()
