"""One Sample Factory 2.1.1 APPO run for the parity suite (run in its venv ``<peers>/sf``):
``--env`` (any gymnasium id) for ``--steps`` env steps, every other argument Sample
Factory's own, printing each training episode as CleanRL's scripts do
(``global_step=<steps>, episodic_return=<return>``) so one parser reads both.

    python sf_learn.py --env Acrobot-v1 --steps 200000 --seed 1 --rollout=32 ...

Sample Factory itself logs only the mean of its last 100 episodes every few seconds, so
each env is wrapped to print its episodes as they end, at the env steps stepped so far.
Those are counted in this process: the run is serial (``--serial_mode=True``, one rollout
worker: sampling, inference and learning take turns on one core), so every env is stepped
here and the count is the run's. Sample Factory's random warm-up steps
(``--decorrelate_envs_on_one_worker``) are turned off, as they would be counted here but
not by its budget. Its ``env_frameskip`` is 1: frames are env steps.
"""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.train import run_rl


class PrintEpisodes(gym.Wrapper):
    """Print every finished episode's return at the env steps this process has stepped."""

    steps = 0
    """Env steps of all the process's envs together (class-wide: one count per run)."""

    def reset(self, **kwargs):
        self.episode_return = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        PrintEpisodes.steps += 1
        self.episode_return += float(reward)
        if terminated or truncated:  # CleanRL prints the step's 0-based index
            step = PrintEpisodes.steps - 1
            print(f"global_step={step}, episodic_return={self.episode_return}", flush=True)
        return observation, reward, terminated, truncated, info


def make_env(full_env_name, cfg=None, env_config=None, render_mode=None):
    """Sample Factory's env factory: the gymnasium task, its episodes printed."""
    return PrintEpisodes(gym.make(full_env_name, render_mode=render_mode))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    arguments, settings = parser.parse_known_args()
    register_env(arguments.env, make_env)
    argv = [
        *settings,
        f"--env={arguments.env}",
        f"--seed={arguments.seed}",
        f"--train_for_env_steps={arguments.steps}",
        "--serial_mode=True",
        "--num_workers=1",
        "--decorrelate_envs_on_one_worker=False",
        "--set_workers_cpu_affinity=False",
        "--device=cpu",
        "--with_wandb=False",
        "--experiment=parity",
        "--train_dir=train_dir",  # in the suite's scratch working dir
    ]
    sf_parser, _ = parse_sf_args(argv=argv)
    return run_rl(parse_full_cfg(sf_parser, argv))


if __name__ == "__main__":
    sys.exit(main())
