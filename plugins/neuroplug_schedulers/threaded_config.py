"""The settings of ``scheduler=threaded``: its config schema, beside
:mod:`neuroplug_schedulers.threaded`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.scheduler_configs`` entry point
``threaded``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.evaluation.config import LockstepSchedulerConfig


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
