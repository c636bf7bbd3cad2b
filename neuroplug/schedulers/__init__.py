"""Deprecated: the episode engine moved to :mod:`neuroplug.engine` (this package held the
engine, not schedulers; the scheduler plugins live in ``plugins/``). Importing from here
still works, with a :class:`DeprecationWarning`, until the next contract version."""

import warnings

from neuroplug.engine import LockstepEvaluation, LockstepScheduler, LockstepSchedulerConfig

warnings.warn(
    "neuroplug.schedulers moved to neuroplug.engine (neuroplug.schedulers.lockstep is "
    "neuroplug.engine.lockstep); import from there",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = ["LockstepEvaluation", "LockstepScheduler", "LockstepSchedulerConfig"]
