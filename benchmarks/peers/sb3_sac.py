"""Stable-Baselines3's SAC on a gymnasium MuJoCo task for ``benchmarks/off_policy.py`` (run
in SB3's own venv): CleanRL's settings (256-256 ReLU actor and critics, batch 256, buffer
1M, learning starts ``--learning-starts``, one gradient step per env step), timed over
``--steps`` env steps; prints one JSON line with the steps per second."""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import torch
from stable_baselines3 import SAC


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HalfCheetah-v4")
    parser.add_argument("--steps", type=int, default=15_000)
    parser.add_argument("--learning-starts", type=int, default=5_000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = SAC(
        "MlpPolicy",
        gym.make(args.env),
        learning_rate=3e-4,
        buffer_size=1_000_000,
        learning_starts=args.learning_starts,
        batch_size=256,
        policy_kwargs={"net_arch": [256, 256]},
        device="cpu",
        seed=1,
    )
    started = time.perf_counter()
    model.learn(args.steps)
    seconds = time.perf_counter() - started
    print(json.dumps({"steps": args.steps, "seconds": seconds, "sps": args.steps / seconds}))


if __name__ == "__main__":
    main()
