"""Stable-Baselines3's DQN on CartPole-v1 with RL Zoo's settings for
``benchmarks/off_policy.py`` (run in SB3's own venv): 256-256 ReLU, batch 64, lr 2.3e-3,
buffer 100k, learning starts 1000, 128 gradient steps every 256 env steps, the target
copied every 10 steps, epsilon 1 -> 0.04 over 16%; timed over ``--steps`` env steps; prints
one JSON line with the steps per second."""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import torch
from stable_baselines3 import DQN


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = DQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        exploration_fraction=0.16,
        exploration_final_eps=0.04,
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
