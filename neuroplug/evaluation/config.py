"""The settings every scheduler built on lockstep lanes shares, in a module that imports
no torch: a scheduler's config schema is read before a run is built (``--help``, a bad
value), and the config entry point names it without importing the engine."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import SchedulerConfig
from neuroplug.errors import require


@dataclass
class LockstepSchedulerConfig(SchedulerConfig):
    """Settings shared by the schedulers built on lockstep lanes."""

    max_envs: int | None = None
    """EnvPool slots (lanes): the most episodes in flight at once; null: the env family's
    ``engine_lanes`` (1,024 for classic control, whose steps cost less than the engine's
    own work per step, 256 elsewhere). Results depend on it (a lane plays its episodes one
    after another from one env seed), not on the schedule."""

    def check(self) -> None:
        super().check()
        require(
            self.max_envs is None or self.max_envs >= 1,
            "scheduler.max_envs",
            f"got {self.max_envs}",
            "an integer >= 1, or null for the env family's default",
        )
