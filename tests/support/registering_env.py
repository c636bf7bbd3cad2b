"""A module that registers an env with gymnasium when it is imported, as MiniGrid and
Flappy Bird do: ``RegisteredCorridor-v0`` exists only once this module was imported."""

from __future__ import annotations

import gymnasium
from corridor_env import Corridor

gymnasium.register(id="RegisteredCorridor-v0", entry_point=Corridor, max_episode_steps=30)
