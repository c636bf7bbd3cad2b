"""The episode engine: lockstep lanes that play a population's episodes on EnvPool.

Every evaluation plays through it — the built-in schedulers (``plugins/neuroplug_schedulers``
and ``neuroplug_ray``, which differ only in how they group and place lanes) and
:mod:`neuroplug.replay` — so they all play the same episodes with the same members.
"""

from neuroplug.engine.lockstep import (
    LockstepEvaluation,
    LockstepScheduler,
    LockstepSchedulerConfig,
)

__all__ = ["LockstepEvaluation", "LockstepScheduler", "LockstepSchedulerConfig"]
