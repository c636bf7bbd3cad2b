"""Multi-agent Atari (PettingZoo's ``pettingzoo.atari``) with its ROMs from the ``ale-py``
package, preprocessed as CleanRL's ``ppo_pettingzoo_ma_atari.py`` does.

PettingZoo looks for a game's ROM in a folder it is given; ``ale-py`` (on the package
registry) ships the ROMs in ``ale_py/roms``, so nothing is downloaded by AutoROM. The
frames are SuperSuit's chain in CleanRL's script, frame for frame (``max_observation_v0(2)``,
``frame_skip_v0(frame_skip)``, ``clip_reward_v0(-1, 1)``, ``color_reduction_v0("B")``,
``resize_v1(size, size)``, ``frame_stack_v1(stack)``): :class:`AtariFrames` makes the same
observations, rewards and episode ends without SuperSuit's wrappers, which turn a parallel
env into a turn-by-turn one and back for every wrapper and preprocess every agent's copy of
the one screen, most of a step's time. ``env.parallel_env=neuroplug.envs.multi_agent.
atari:parallel_env`` with ``env.kwargs.game=pong_v3`` (``env=pong_ma``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

from neuroplug.errors import ConfigError


def parallel_env(
    game: str = "pong_v3", frame_skip: int = 4, stack: int = 4, size: int = 84,
    clip_rewards: bool = True, **settings: Any,
):  # fmt: skip
    """PettingZoo's ``game`` (``pong_v3``, ``boxing_v2``, ...) as a preprocessed parallel
    env; ``settings`` go to the game (``max_cycles``, ``render_mode``)."""
    try:
        import ale_py
        import tinyscaler  # noqa: F401  (SuperSuit's resize, the same numbers)
    except ImportError as error:
        raise ConfigError(
            "env.parallel_env", f"multi-agent Atari needs ale-py and tinyscaler ({error})",
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
    game_env = module.parallel_env(auto_rom_install_path=str(roms), **settings)
    # The module's env is its parallel game turned turn-by-turn and back (PettingZoo's
    # conversions, with an order and action-bounds check): the game itself steps the same.
    return AtariFrames(game_env.unwrapped, frame_skip, stack, size, clip_rewards)


def supersuit_frames(game: str = "pong_v3", **settings: Any):
    """The same frames through SuperSuit's wrappers, as CleanRL's script makes them (needs
    ``supersuit``): what :class:`AtariFrames` is checked and timed against."""
    import ale_py
    import supersuit

    module = importlib.import_module(f"pettingzoo.atari.{game}")
    env = module.parallel_env(auto_rom_install_path=str(Path(ale_py.__file__).parent), **settings)
    env = supersuit.max_observation_v0(env, 2)
    env = supersuit.frame_skip_v0(env, 4)
    env = supersuit.clip_reward_v0(env, lower_bound=-1, upper_bound=1)
    env = supersuit.color_reduction_v0(env, mode="B")
    env = supersuit.resize_v1(env, x_size=84, y_size=84)
    return supersuit.frame_stack_v1(env, 4)


class AtariFrames:
    """A PettingZoo Atari parallel env's screens as CleanRL's agents see them: each step
    ``frame_skip`` of the game's frames under the same actions (rewards summed, then
    clipped to [-1, 1]; stopping at the frame every agent's episode ends), the max of the
    last two frames' screens, its blue channel scaled to ``size`` x ``size`` (bilinear),
    the last ``stack`` of those stacked on the last axis (zeros before the first). Every
    agent sees the one screen, so it is made once a step, not once an agent."""

    def __init__(
        self, game: Any, frame_skip: int, stack: int, size: int, clip_rewards: bool
    ) -> None:
        import tinyscaler
        from gymnasium.spaces import Box

        self.game = game
        self.frame_skip = frame_skip
        self.size = size
        self.clip_rewards = clip_rewards
        self._scale = tinyscaler.scale
        self.possible_agents = list(game.possible_agents)
        self.agents: list[str] = []
        self.metadata = game.metadata
        self.stack = np.zeros((size, size, stack), np.uint8)
        self._space = Box(0, 255, self.stack.shape, np.uint8)
        self._screens: list[np.ndarray] = []

    @property
    def unwrapped(self) -> Any:
        """The game itself (its ``max_cycles``, its ALE)."""
        return self.game.unwrapped

    def observation_space(self, agent: str) -> Any:
        """Every agent's: ``(size, size, stack)`` bytes."""
        return self._space

    def action_space(self, agent: str) -> Any:
        """The game's own."""
        return self.game.action_space(agent)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """A new game: its first screen the stack's newest, zeros behind it."""
        observations, infos = self.game.reset(seed=seed, options=options)
        self.agents = list(self.game.agents)
        self.stack[:] = 0
        self._screens = []
        return self._observe(observations), infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        """``frame_skip`` frames of the game under ``actions``."""
        # SuperSuit's frame skip draws its count from the game's RNG each step (a fixed
        # count, drawn all the same): drawn here too, so the game's RNG runs as CleanRL's.
        skips = int(self.game.unwrapped.np_random.integers(self.frame_skip, self.frame_skip + 1))
        rewards = dict.fromkeys(self.agents, 0.0)
        observations: dict = {}
        terminations: dict = {}
        truncations: dict = {}
        infos: dict = {}
        last: dict = {}  # the last observation of an agent that left before the step's end
        for frame in range(skips):
            # An agent that left mid-step acts no more (the game would take its action).
            playing = {
                agent: action for agent, action in actions.items() if agent in self.game.agents
            }
            seen, earned, ended, cut, info = self.game.step(playing)
            for agent, reward in earned.items():
                rewards[agent] = rewards.get(agent, 0.0) + reward
                terminations[agent], truncations[agent] = ended[agent], cut[agent]
                infos[agent], observations[agent] = info[agent], seen[agent]
            if seen:
                self._screens = [*self._screens[-1:], next(iter(seen.values()))]
            if all(ended[agent] or cut[agent] for agent in ended):
                break
            gone = [agent for agent in earned if ended[agent] or cut[agent]]
            if gone and frame < skips - 1:  # it saw this frame's screen, not the step's last
                stack = self._pushed(self._newest())
                last.update({agent: stack.copy() for agent in gone})
        # An agent whose episode was cut leaves too (the game keeps it, PettingZoo's
        # conversions do not).
        self.agents = [
            agent for agent in self.game.agents
            if not (terminations.get(agent) or truncations.get(agent))
        ]  # fmt: skip
        if self.clip_rewards:
            rewards = {agent: float(np.clip(reward, -1, 1)) for agent, reward in rewards.items()}
        return {**self._observe(observations), **last}, rewards, terminations, truncations, infos

    def _observe(self, screens: dict) -> dict:
        """Each agent's stack after the newest screen (the one screen, made once)."""
        if not screens:
            return {}
        if not self._screens:  # a reset
            self._screens = [next(iter(screens.values()))]
        self.stack = self._pushed(self._newest())
        return {agent: self.stack.copy() for agent in screens}

    def _newest(self) -> np.ndarray:
        """The newest frame an agent sees: the last two screens' max, blue, scaled."""
        newest = self._screens[0] if len(self._screens) == 1 else np.maximum(*self._screens)
        frame = self._scale(
            np.ascontiguousarray(newest[:, :, 2:3]), (self.size, self.size), mode="bilinear"
        )
        return frame.reshape(self.size, self.size)

    def _pushed(self, frame: np.ndarray) -> np.ndarray:
        """The stack with ``frame`` its newest, the oldest gone (a new array)."""
        stack = np.empty_like(self.stack)
        stack[..., :-1] = self.stack[..., 1:]
        stack[..., -1] = frame
        return stack

    def render(self) -> Any:
        """The game's own drawing."""
        return self.game.render()

    def close(self) -> None:
        """Close the game."""
        self.game.close()
