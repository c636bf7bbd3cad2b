"""pycma's CMA-ES (or its separable form, ``--diagonal``) around a plain gymnasium loop,
for the parity suite (run in pycma's own venv): the :mod:`policy_shape` policy, one
episode per member, ``--generations`` of ``--population``; prints each generation as
``evaluations=.., population_mean=.., env_steps=.., members=..``.

    python pycma_search.py --env Pendulum-v1 --generations 100 --population 17 --seed 1
"""

from __future__ import annotations

import argparse

import cma
import gymnasium as gym
import numpy as np
from policy_shape import act, initial_params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--generations", type=int, required=True)
    parser.add_argument("--population", type=int, required=True)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--diagonal", action="store_true", help="sep-CMA-ES (CMA_diagonal)")
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    env = gym.make(arguments.env)
    space = env.action_space
    outputs = space.n if hasattr(space, "n") else space.shape[0]
    start = initial_params(env.observation_space.shape[0], outputs, arguments.seed)
    options = {"popsize": arguments.population, "seed": arguments.seed, "verbose": -9}
    if arguments.diagonal:
        options["CMA_diagonal"] = True
    search = cma.CMAEvolutionStrategy(start, arguments.sigma, options)
    episodes, steps = 0, 0
    for _ in range(arguments.generations):
        candidates = search.ask()
        returns = []
        for params in candidates:
            observation, _ = env.reset(seed=arguments.seed * 1_000_003 + episodes)
            total, done = 0.0, False
            while not done:
                observation, reward, terminated, truncated, _ = env.step(
                    act(params, observation, space)
                )
                total += float(reward)
                steps += 1
                done = terminated or truncated
            returns.append(total)
            episodes += 1
        search.tell(candidates, [-value for value in returns])  # pycma minimises
        print(
            f"evaluations={episodes}, population_mean={np.mean(returns)}, "
            f"env_steps={steps}, members={len(returns)}",
            flush=True,
        )


if __name__ == "__main__":
    main()
