"""``scheduler=pipelined``: K groups of envs in flight, so inference hides env stepping.

The lanes are split into ``groups`` groups, each its own EnvPool driven with
``send``/``recv``. While group g's members go through the backend (on CUDA, in g's own
stream), the other groups' envs step in EnvPool's C++ threads, which run without the
GIL. Only lanes with a live episode are sent, so the envs of finished members are not
stepped. Same episodes, same results as the serial and threaded schedules.
"""

from __future__ import annotations

from neuroplug.api import Backend
from neuroplug.evaluation.lockstep import LockstepScheduler
from neuroplug_schedulers.pipelined_config import PipelinedSchedulerConfig


class PipelinedScheduler(LockstepScheduler):
    """Overlap one group's forward pass with the other groups' env steps."""

    config_class = PipelinedSchedulerConfig

    def groups(self, backend: Backend) -> int:
        return self.config.groups
