"""Multi-agent Atari (PettingZoo's ``pettingzoo.atari``) with its ROMs from the ``ale-py``
package, preprocessed as CleanRL's ``ppo_pettingzoo_ma_atari.py`` does.

PettingZoo looks for a game's ROM in a folder it is given; ``ale-py`` (on the package
registry) ships the ROMs in ``ale_py/roms``, so nothing is downloaded by AutoROM. The
frames go through SuperSuit as CleanRL's script puts them: the max of the last two frames,
``frame_skip`` frames a step, rewards clipped to [-1, 1], one grey channel, ``size`` x
``size``, the last ``stack`` frames stacked. ``env.parallel_env=neuroplug.envs.multi_agent.
atari:parallel_env`` with ``env.kwargs.game=pong_v3`` (``env=pong_ma``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from neuroplug.errors import ConfigError


def parallel_env(
    game: str = "pong_v3", frame_skip: int = 4, stack: int = 4, size: int = 84,
    clip_rewards: bool = True, **settings: Any,
):  # fmt: skip
    """PettingZoo's ``game`` (``pong_v3``, ``boxing_v2``, ...) as a preprocessed parallel
    env; ``settings`` go to the game (``max_cycles``, ``render_mode``)."""
    try:
        import ale_py
        import supersuit
    except ImportError as error:
        raise ConfigError(
            "env.parallel_env", f"multi-agent Atari needs ale-py and supersuit ({error})",
            "pip install 'neuroplug[multiagent]'",
        ) from None  # fmt: skip
    try:
        module = importlib.import_module(f"pettingzoo.atari.{game}")
    except ImportError as error:
        raise ConfigError(
            "env.kwargs.game", f"no PettingZoo Atari game {game!r} ({error})",
            "a module of pettingzoo.atari: pong_v3, boxing_v2, tennis_v3, ...",
        ) from None  # fmt: skip
    roms = Path(ale_py.__file__).parent
    env = module.parallel_env(auto_rom_install_path=str(roms), **settings)
    env = supersuit.max_observation_v0(env, 2)
    env = supersuit.frame_skip_v0(env, frame_skip)
    if clip_rewards:
        env = supersuit.clip_reward_v0(env, lower_bound=-1, upper_bound=1)
    env = supersuit.color_reduction_v0(env, mode="B")
    env = supersuit.resize_v1(env, x_size=size, y_size=size)
    return supersuit.frame_stack_v1(env, stack)
