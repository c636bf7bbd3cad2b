"""Machinery the built-in schedulers share (the plugins themselves live in ``plugins/``)."""

from neuroplug.schedulers.lockstep import (
    LockstepEvaluation,
    LockstepScheduler,
    LockstepSchedulerConfig,
)

__all__ = ["LockstepEvaluation", "LockstepScheduler", "LockstepSchedulerConfig"]
