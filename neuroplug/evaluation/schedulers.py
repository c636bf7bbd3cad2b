"""The built-in schedules, both lockstep lanes (:mod:`neuroplug.evaluation.lockstep`) grouped
differently: ``scheduler=threaded`` and ``scheduler=pipelined``, registered under the
``neuroplug.schedulers`` entry-point group as a package's scheduler is (``scheduler=ray``,
``plugins/neuroplug_ray``, places the same lanes on Ray actors).

``scheduler=threaded``: EnvPool's C++ threads step all envs, then one batched forward.
Stepping uses every core, so the envs' share of a step shrinks; but the phases still
alternate — the GPU (or the CPU's inference threads) waits while envs step.

Except where overlapping measured faster: with ``groups: 0`` (the default) an image task
whose forward passes run on a GPU is played in two groups, as ``scheduler=pipelined``
plays it (on a GPU, Breakout's Nature CNNs ran faster pipelined, HalfCheetah's small MLP
alternating: ``benchmarks/results/schedulers.md``). On a CPU the backend and the envs
share the cores, so alternating stays the rule there.

``scheduler=serial`` is this scheduler with one EnvPool thread and one group
(``conf/scheduler/serial.yaml``, :func:`serial_config`): the naive schedule, where the
simulators wait while the backend runs and the backend waits while one CPU thread steps
the envs; the baseline the other schedules are measured against.

``scheduler=pipelined``: K groups of envs in flight, so inference hides env stepping. The
lanes are split into ``groups`` groups, each its own EnvPool driven with
``send``/``recv``. While group g's members go through the backend (on CUDA, in g's own
stream), the other groups' envs step in EnvPool's C++ threads, which run without the
GIL. Only lanes with a live episode are sent, so the envs of finished members are not
stepped. Same episodes, same results as the serial and threaded schedules.
"""

from __future__ import annotations

from neuroplug.api import Backend
from neuroplug.evaluation.config import PipelinedSchedulerConfig, ThreadedSchedulerConfig
from neuroplug.evaluation.lockstep import LockstepScheduler

PIPELINED_GROUPS = 2
"""Groups of envs in flight when ``groups: 0`` picks pipelining."""


class ThreadedScheduler(LockstepScheduler):
    """Alternate multithreaded env steps and batched inference of the alive members."""

    config_class = ThreadedSchedulerConfig

    def groups(self, backend: Backend) -> int:
        if self.config.groups:
            return self.config.groups
        pipelined = self.env.is_image and backend.device.type == "cuda"
        return PIPELINED_GROUPS if pipelined else 1


def serial_config(**settings) -> ThreadedSchedulerConfig:
    """The settings of ``scheduler=serial``: one EnvPool thread, one group (``settings``
    override any field but the name)."""
    return ThreadedSchedulerConfig(
        **{"env_threads": 1, "groups": 1, **settings, "name": "threaded"}
    )


class PipelinedScheduler(LockstepScheduler):
    """Overlap one group's forward pass with the other groups' env steps."""

    config_class = PipelinedSchedulerConfig

    def groups(self, backend: Backend) -> int:
        return self.config.groups
