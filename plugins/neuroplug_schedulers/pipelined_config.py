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
    """Settings of the pipelined scheduler."""

    env_threads: int = 0
    """EnvPool worker threads in all, shared out between the groups' pools; 0 means one
    per CPU core."""
    groups: int = 2
    """Groups of envs in flight (K >= 2): one in the backend while the others step."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.groups >= 2, "scheduler.groups", f"got {self.groups}", "an integer >= 2")
