"""The settings of the schedulers built on lockstep lanes: what every one shares
(:class:`LockstepSchedulerConfig`, which ``scheduler=ray`` extends too) and the built-in
``scheduler=threaded``'s and ``scheduler=pipelined``'s (:mod:`neuroplug.evaluation.schedulers`).
In a module that imports no torch: a scheduler's config schema is read before a run is
built (``--help``, a bad value), and the config entry points name these classes without
importing the engine."""

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


@dataclass
class ThreadedSchedulerConfig(LockstepSchedulerConfig):
    """Settings of the threaded scheduler: EnvPool's C++ threads step every env, then the
    alive members' forward pass runs, in turn."""

    env_threads: int = 0
    """EnvPool worker threads; 0 means one per CPU core."""
    groups: int = 0
    """Groups of envs in flight: 1 alternates stepping and inference; 0 (auto) plays image
    tasks on a GPU backend in two groups (what measured fastest) and anything else in one.
    Results never depend on it."""

    def check(self) -> None:
        super().check()
        require(self.groups >= 0, "scheduler.groups", f"got {self.groups}", "an integer >= 0")


@dataclass
class PipelinedSchedulerConfig(LockstepSchedulerConfig):
    """Settings of the pipelined scheduler: K groups of envs in flight, one group's
    forward pass running while the others' envs step."""

    env_threads: int = 0
    """EnvPool worker threads in all, shared out between the groups' pools; 0 means one
    per CPU core."""
    groups: int = 2
    """Groups of envs in flight (K >= 2): one in the backend while the others step."""

    def check(self) -> None:
        super().check()
        require(self.groups >= 2, "scheduler.groups", f"got {self.groups}", "an integer >= 2")
