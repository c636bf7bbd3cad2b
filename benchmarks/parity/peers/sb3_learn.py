"""One Stable-Baselines3 run for the parity suite (run in the peers' venv): ``--algo`` on
``--env`` for ``--steps`` env steps with ``--settings`` (RL Zoo's hyperparameters as JSON:
``"lin_0.001"`` is a rate decaying linearly from 0.001, ``n_envs`` the vector env's size,
``net_arch`` the policy's hidden widths, ``action_noise`` a Gaussian exploration noise's
std), printing each training episode as CleanRL's
scripts do (``global_step=<steps>, episodic_return=<return>``) so one parser reads both.

    python sb3_learn.py --algo ppo --env CartPole-v1 --steps 100000 --seed 1 \\
        --settings '{"n_envs": 8, "n_steps": 32, "learning_rate": "lin_0.001"}'
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import stable_baselines3
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.noise import NormalActionNoise


class PrintEpisodes(BaseCallback):
    """Print every finished episode's return (the Monitor wrapper's ``episode`` info)."""

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            episode = info.get("episode")
            if episode is not None:  # CleanRL prints the step's 0-based index
                step = self.num_timesteps - 1
                print(f"global_step={step}, episodic_return={episode['r']}", flush=True)
        return True


def schedule(value):
    """RL Zoo's ``lin_<x>``: a rate falling linearly from x to 0 over the run."""
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return lambda remaining: remaining * start
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", required=True, choices=["ppo", "dqn", "sac", "td3"])
    parser.add_argument("--env", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settings", default="{}")
    arguments = parser.parse_args()
    settings = {key: schedule(value) for key, value in json.loads(arguments.settings).items()}
    envs = make_vec_env(arguments.env, n_envs=settings.pop("n_envs", 1), seed=arguments.seed)
    if "net_arch" in settings:
        settings["policy_kwargs"] = {"net_arch": settings.pop("net_arch")}
    if "action_noise" in settings:  # a Gaussian's std on every action dimension
        actions = envs.action_space.shape[0]
        std = settings.pop("action_noise")
        settings["action_noise"] = NormalActionNoise(np.zeros(actions), std * np.ones(actions))
    algorithm = getattr(stable_baselines3, arguments.algo.upper())
    model = algorithm("MlpPolicy", envs, seed=arguments.seed, device="cpu", **settings)
    model.learn(total_timesteps=arguments.steps, callback=PrintEpisodes())
    print(f"torch threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
