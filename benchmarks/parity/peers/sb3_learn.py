"""One Stable-Baselines3 run for the parity suite (run in the peers' venv): ``--algo`` on
``--env`` for ``--steps`` env steps with ``--settings`` (RL Zoo's hyperparameters as JSON:
``"lin_0.001"`` is a rate decaying linearly from 0.001, ``n_envs`` the vector env's size,
``net_arch`` the policy's hidden widths, ``action_noise`` a Gaussian exploration noise's
std), printing each training episode as CleanRL's
scripts do (``global_step=<steps>, episodic_return=<return>``) so one parser reads both.

    python sb3_learn.py --algo ppo --env CartPole-v1 --steps 100000 --seed 1 \\
        --settings '{"n_envs": 8, "n_steps": 32, "learning_rate": "lin_0.001"}'

With ``--work DIR`` the run saves its model (and an off-policy learner's replay buffer)
there every ``--save-every`` steps, printing ``checkpoint step=<steps>`` once saved, and a
run started again with the same ``--work`` continues from the last save: its vector env
starts new episodes there (SB3 cannot save an env mid-episode), its learning-rate schedule
and learning start go on from the steps done, its random draws are new.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

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


class SaveEvery(BaseCallback):
    """Save the model (and a replay buffer) into ``work`` every ``every`` steps, then
    print ``checkpoint step=<steps>``: what the parity runner keeps to resume from."""

    def __init__(self, work: Path, every: int) -> None:
        super().__init__()
        self.work, self.every = work, every
        self.next_save = 0

    def _on_training_start(self) -> None:
        self.next_save = self.num_timesteps + self.every

    def _on_step(self) -> bool:
        if (
            self.num_timesteps >= self.next_save
            and self.num_timesteps < self.model._total_timesteps
        ):
            self.next_save += self.every
            save(self.model, self.work)
            print(f"checkpoint step={self.num_timesteps}", flush=True)
        return True


def save(model, work: Path) -> None:
    """The model, its replay buffer where it has one, each whole or absent."""
    work.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "replay_buffer"):
        model.save_replay_buffer(work / "replay.tmp.pkl")
        (work / "replay.tmp.pkl").replace(work / "replay.pkl")
    model.save(work / "model.tmp.zip")  # saved last: its presence says the pair is whole
    (work / "model.tmp.zip").replace(work / "model.zip")


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
    parser.add_argument("--work", type=Path, help="save here, and resume from here")
    parser.add_argument("--save-every", type=int, default=10_000)
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
    work = arguments.work
    callbacks = [PrintEpisodes()]
    if work is not None and (work / "model.zip").exists():
        model = algorithm.load(work / "model.zip", env=envs, device="cpu")
        if hasattr(model, "replay_buffer"):
            model.load_replay_buffer(work / "replay.pkl")
        print(f"resumed step={model.num_timesteps}", flush=True)
    else:
        model = algorithm("MlpPolicy", envs, seed=arguments.seed, device="cpu", **settings)
    if work is not None:
        callbacks.append(SaveEvery(work, arguments.save_every))
    done = model.num_timesteps
    model.learn(
        total_timesteps=arguments.steps - done, callback=callbacks, reset_num_timesteps=done == 0
    )
    print(f"torch threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
