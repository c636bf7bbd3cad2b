"""Stable-Baselines3 PPO on CartPole-v1 with RL Zoo's settings: env steps per second.

Run with the Python of a venv that has ``stable-baselines3`` (it is not a neuroplug
dependency); ``benchmarks/ppo_vs_sb3.py`` runs it beside neuroplug and compares. Prints one
JSON line: steps, learning seconds (``model.learn``, environment creation excluded),
steps/s and the versions.

    /path/to/sb3-venv/bin/python benchmarks/peers/sb3_ppo_cartpole.py --steps 100000 --threads 1
"""

import argparse
import json
import time

import stable_baselines3
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=100_000)
parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
parser.add_argument("--seed", type=int, default=0)
arguments = parser.parse_args()
if arguments.threads:
    torch.set_num_threads(arguments.threads)
# rl-baselines3-zoo hyperparams/ppo.yml, CartPole-v1.
env = make_vec_env("CartPole-v1", n_envs=8, seed=arguments.seed)
model = PPO(
    "MlpPolicy",
    env,
    n_steps=32,
    batch_size=256,
    gae_lambda=0.8,
    gamma=0.98,
    n_epochs=20,
    ent_coef=0.0,
    learning_rate=lambda fraction: 1e-3 * fraction,
    clip_range=lambda fraction: 0.2 * fraction,
    seed=arguments.seed,
    device="cpu",
    verbose=0,
)
started = time.perf_counter()
model.learn(total_timesteps=arguments.steps)
seconds = time.perf_counter() - started
print(
    json.dumps(
        {
            "peer": f"stable-baselines3 {stable_baselines3.__version__}",
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "steps": model.num_timesteps,
            "learn_seconds": seconds,
            "steps_per_second": model.num_timesteps / seconds,
        }
    )
)
