"""A tiny gymnasium env that exists only in the tests: walk a corridor to its far end.

The agent starts at a random cell of the left half (drawn from the env's seed) and moves
left or right (Discrete(2)); it observes its position and the distance left as two floats.
Reaching the last cell ends the episode with reward +1; every step costs 0.01. The best
policy walks right: return 1 - 0.01 * (steps taken), at most 0.99 from the last-but-one cell.
"""

from __future__ import annotations

import gymnasium
import numpy as np


class Corridor(gymnasium.Env):
    """``length`` cells; see the module docstring."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, length: int = 8, render_mode: str | None = None) -> None:
        self.length = length
        self.render_mode = render_mode
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self.position = 0

    def _observation(self) -> np.ndarray:
        last = self.length - 1
        return np.array([self.position / last, (last - self.position) / last], np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.position = int(self.np_random.integers(0, self.length // 2))
        return self._observation(), {"position": self.position}

    def step(self, action):
        self.position = int(np.clip(self.position + (1 if action == 1 else -1), 0, self.length - 1))
        arrived = self.position == self.length - 1
        reward = (1.0 if arrived else 0.0) - 0.01
        return self._observation(), reward, arrived, False, {"position": self.position}

    def render(self) -> np.ndarray:
        frame = np.zeros((8, 8 * self.length, 3), np.uint8)
        frame[:, 8 * self.position : 8 * self.position + 8] = 255
        return frame


class ColourCorridor(Corridor):
    """The corridor seen as a 36 x 36 colour picture of noise, drawn from the env's seed
    each step (three channels that are one picture, not a stack of frames)."""

    def __init__(self, length: int = 8, render_mode: str | None = None) -> None:
        super().__init__(length, render_mode)
        self.observation_space = gymnasium.spaces.Box(0, 255, (36, 36, 3), np.uint8)

    def _observation(self) -> np.ndarray:
        return self.np_random.integers(0, 256, (36, 36, 3), dtype=np.uint8)
