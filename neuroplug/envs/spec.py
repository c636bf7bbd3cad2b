"""What the rest of neuroplug needs to know about an environment, without starting it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class EnvSpec:
    """Observation and action spaces, frame accounting and the kwargs to build pools."""

    task_id: str
    family: str
    """``atari``, ``mujoco`` or ``classic``."""
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    discrete: bool
    num_actions: int
    """Discrete: number of actions. Continuous: action dimension."""
    action_low: np.ndarray | None
    action_high: np.ndarray | None
    frame_skip: int
    """Emulator frames per agent step (4 on Atari; 1 where there is no such notion)."""
    max_episode_steps: int
    solved_return: float | None
    make_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for ``envpool.make`` besides num_envs, seeds and threads."""

    @property
    def is_image(self) -> bool:
        """Whether observations are stacked frames ``(C, H, W)``."""
        return len(self.obs_shape) == 3
