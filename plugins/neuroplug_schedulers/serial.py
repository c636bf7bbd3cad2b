"""``scheduler=serial``: the naive schedule — step every env in one thread, then infer.

The simulators wait while the backend runs and the backend waits while one CPU thread
steps the envs. It is the baseline the other schedules are measured against, and plays
exactly the same episodes as they do (see :mod:`neuroplug.schedulers.lockstep`).
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.schedulers.lockstep import LockstepScheduler, LockstepSchedulerConfig


@dataclass
class SerialSchedulerConfig(LockstepSchedulerConfig):
    """Settings of the serial scheduler."""

    num_threads: int = 1
    """EnvPool worker threads: one, the naive schedule (0 means one per core)."""


class SerialScheduler(LockstepScheduler):
    """Alternate one-thread env steps and batched inference of the alive members."""

    config_class = SerialSchedulerConfig
