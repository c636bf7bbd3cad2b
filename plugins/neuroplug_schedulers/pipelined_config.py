"""The settings of ``scheduler=pipelined``: its config schema, beside
:mod:`neuroplug_schedulers.pipelined`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.scheduler_configs`` entry point
``pipelined``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.evaluation.config import LockstepSchedulerConfig


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
