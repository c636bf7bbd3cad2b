"""``scheduler=threaded``: EnvPool's C++ threads step all envs, then one batched forward.

Stepping uses every core, so the envs' share of a step shrinks; but the phases still
alternate — the GPU (or the CPU's inference threads) waits while envs step.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.schedulers.lockstep import LockstepScheduler, LockstepSchedulerConfig


@dataclass
class ThreadedSchedulerConfig(LockstepSchedulerConfig):
    """Settings of the threaded scheduler."""

    num_threads: int = 0
    """EnvPool worker threads; 0 means one per CPU core."""


class ThreadedScheduler(LockstepScheduler):
    """Alternate multithreaded env steps and batched inference of the alive members."""

    config_class = ThreadedSchedulerConfig
