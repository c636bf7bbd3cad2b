"""CleanRL's ``ppo_pettingzoo_ma_atari.py``, run unmodified on today's PettingZoo, SuperSuit,
gymnasium and ale-py (in the peers' venv ``pzma``).

The script was written for gym 0.23, PettingZoo 1.18, SuperSuit 3.4 and multi-agent-ale-py,
none of which installs on Python 3.11 (PettingZoo 1.18 requires Python < 3.11). This runner
supplies what those gave it, and nothing of its algorithm:

- a ``gym`` module: gymnasium's spaces, and gym 0.23's ``RecordEpisodeStatistics`` for a
  vector env (each env's return and length summed, ``info["episode"]`` at an episode's end,
  as the script reads them);
- ``supersuit.concat_vec_envs_v1(..., base_class="gym")``: today's vector env with gym
  0.23's calls (``reset()`` returns the observations; ``step`` returns observations,
  rewards, ``done`` = terminated or truncated, and one info dict per env);
- the game's ROMs from the ale-py package (PettingZoo would look in AutoROM's folder).

It also prints each training episode's length beside CleanRL's return lines
(``global_step=.., episode_length=.., episodic_return=..``, ``global_step`` counted as the
script counts it: every env's step), what the parity suite scores self-play Pong by.

::

    python cleanrl_ma_atari.py <cleanrl>/cleanrl/ppo_pettingzoo_ma_atari.py --seed 1 \\
        --total-timesteps 100000 --cuda False
"""

from __future__ import annotations

import atexit
import functools
import importlib
import runpy
import sys
import types
from pathlib import Path

import gymnasium
import numpy as np
import supersuit


class EpisodeStatistics:
    """gym 0.23's ``RecordEpisodeStatistics`` over a vector env of the old calls."""

    def __init__(self, envs) -> None:
        self.envs = envs
        self.returns = np.zeros(envs.num_envs)
        self.lengths = np.zeros(envs.num_envs, dtype=np.int64)
        self.global_step = 0
        atexit.register(self.report_unfinished)

    def report_unfinished(self) -> None:
        """At exit, each env's episode still going and its length so far: a run whose
        rallies never end (no episode line at all) says so."""
        print(f"unfinished_episode_lengths={self.lengths.tolist()}", flush=True)

    def __getattr__(self, name):
        return getattr(self.envs, name)

    def reset(self):
        self.returns[:], self.lengths[:] = 0.0, 0
        return self.envs.reset()

    def step(self, actions):
        observations, rewards, dones, infos = self.envs.step(actions)
        self.returns += rewards
        self.lengths += 1
        self.global_step += self.envs.num_envs
        for env in np.flatnonzero(dones):
            print(
                f"global_step={self.global_step}, episode_length={self.lengths[env]}, "
                f"episodic_return={self.returns[env]}",
                flush=True,
            )
            infos[env] = {
                **infos[env],
                "episode": {"r": self.returns[env], "l": int(self.lengths[env])},
            }
            self.returns[env], self.lengths[env] = 0.0, 0
        return observations, rewards, dones, infos


class OldCalls:
    """A gymnasium-style vector env (SuperSuit's) with gym 0.23's ``reset`` and ``step``."""

    def __init__(self, envs) -> None:
        self.envs = envs
        self.num_envs = envs.num_envs
        self.observation_space = envs.observation_space
        self.action_space = envs.action_space

    def reset(self):
        observations, _ = self.envs.reset()
        return observations

    def step(self, actions):
        observations, rewards, terminated, truncated, infos = self.envs.step(actions)
        dones = np.logical_or(terminated, truncated)
        if isinstance(infos, dict):  # one dict of arrays: split it per env
            infos = [{key: value[env] for key, value in infos.items()} for env in range(len(dones))]
        return observations, np.asarray(rewards), dones, [dict(info) for info in infos]

    def close(self) -> None:
        self.envs.close()


def install_gym() -> None:
    """The ``gym`` module the script imports."""
    gym = types.ModuleType("gym")
    gym.spaces = gymnasium.spaces
    gym.wrappers = types.SimpleNamespace(RecordEpisodeStatistics=EpisodeStatistics)
    sys.modules["gym"] = gym


def install_concat() -> None:
    """``concat_vec_envs_v1`` that takes ``base_class="gym"``."""
    today = supersuit.concat_vec_envs_v1

    @functools.wraps(today)
    def concat(vec_env, num_vec_envs, num_cpus=0, base_class="gymnasium"):
        if base_class == "gym":
            return OldCalls(today(vec_env, num_vec_envs, num_cpus, "gymnasium"))
        return today(vec_env, num_vec_envs, num_cpus, base_class)

    supersuit.concat_vec_envs_v1 = concat


def install_roms(game: str) -> None:
    """PettingZoo's ``game`` built with ale-py's ROMs."""
    import ale_py

    module = importlib.import_module(f"pettingzoo.atari.{game}")
    roms = str(Path(ale_py.__file__).parent)
    module.parallel_env = functools.partial(module.parallel_env, auto_rom_install_path=roms)


def main() -> None:
    script, *arguments = sys.argv[1:]
    game = arguments[arguments.index("--env-id") + 1] if "--env-id" in arguments else "pong_v3"
    install_gym()
    install_concat()
    install_roms(game)
    sys.argv = [script, *arguments]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
