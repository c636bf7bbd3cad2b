"""Stable-Baselines3's vectorised envs stepping a gymnasium env with a free policy: env
steps per second.

Run with the Python of a venv that has ``stable-baselines3``; ``benchmarks/gymnasium_envs.py``
runs it beside neuroplug's pools. The envs are ``gymnasium.make(id)`` as SB3's users build
them, without SB3's ``Monitor`` (the cheapest SB3 path); actions are drawn before the
clock starts. Prints one JSON line.

    /path/to/sb3-venv/bin/python benchmarks/peers/sb3_vec_env_rate.py --vec dummy --envs 8
"""

import argparse
import json
import time

import gymnasium
import numpy as np
import stable_baselines3
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv


def _maker(env_id: str):
    return lambda: gymnasium.make(env_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--vec", choices=("dummy", "subproc"), default="dummy")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200_000, help="env steps in all")
    arguments = parser.parse_args()
    vec_class = DummyVecEnv if arguments.vec == "dummy" else SubprocVecEnv
    env = vec_class([_maker(arguments.env) for _ in range(arguments.envs)])
    env.seed(0)
    env.reset()
    batches = arguments.steps // arguments.envs
    actions = np.random.default_rng(0).integers(0, env.action_space.n, (batches, arguments.envs))
    for batch in range(min(100, batches)):  # warm up
        env.step(actions[batch])
    started = time.perf_counter()
    for batch in range(batches):
        env.step(actions[batch])
    seconds = time.perf_counter() - started
    env.close()
    print(
        json.dumps(
            {
                "vec_env": vec_class.__name__,
                "envs": arguments.envs,
                "steps": batches * arguments.envs,
                "seconds": seconds,
                "steps_per_second": batches * arguments.envs / seconds,
                "stable_baselines3": stable_baselines3.__version__,
                "gymnasium": gymnasium.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
