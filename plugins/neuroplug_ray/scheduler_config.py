"""The settings of ``scheduler=ray``: its config schema, beside
:mod:`neuroplug_ray.scheduler`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.scheduler_configs`` entry point ``ray``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.evaluation.config import LockstepSchedulerConfig


@dataclass
class RaySchedulerConfig(LockstepSchedulerConfig):
    """Settings of the Ray scheduler: Ray evaluator actors play shards of the population
    (``pip install 'neuroplug[ray]'``)."""

    num_workers: int = 2
    """Evaluator actors (long-lived; each builds its backend and policy once)."""
    cpus_per_worker: float = 1.0
    """CPUs Ray reserves per worker (also its EnvPool and torch threads, at least 1)."""
    gpus_per_worker: float = 0.0
    """GPUs Ray reserves per worker (fractions share one GPU)."""
    address: str | None = None
    """A running cluster to join (``auto``: the local one started with ``ray start``);
    null: ``RAY_ADDRESS`` if set, else an embedded Ray for this run."""
    members_per_shard: int = 8
    """Members per shard (all their episodes): the unit of work and of retry. Results
    depend on it (and on ``max_envs``), never on the number of workers."""
    shard_retries: int = 3
    """Times a failed shard (a dead worker, a crashed simulator) is re-run elsewhere."""
    envs_per_shard: int = 4
    """Learners: a learner's envs go to the workers in shards of this many, each with its
    own pool, seeds and action stream, so results do not depend on the number of workers
    (``algo.num_envs`` must be a multiple; at least ``num_workers`` shards)."""
    groups: int = 1
    """Lane groups per worker: 1 plays a shard as ``threaded`` does, 2+ as ``pipelined``."""

    def check(self) -> None:
        super().check()
        require(
            self.num_workers >= 1,
            "scheduler.num_workers",
            f"got {self.num_workers}",
            "an integer >= 1",
        )
        require(
            self.cpus_per_worker > 0,
            "scheduler.cpus_per_worker",
            f"got {self.cpus_per_worker}",
            "a number > 0",
        )
        require(
            self.gpus_per_worker >= 0,
            "scheduler.gpus_per_worker",
            f"got {self.gpus_per_worker}",
            "a number >= 0",
        )
        for name in ("members_per_shard", "groups"):
            value = getattr(self, name)
            require(value >= 1, f"scheduler.{name}", f"got {value}", "an integer >= 1")
        require(
            self.shard_retries >= 0,
            "scheduler.shard_retries",
            f"got {self.shard_retries}",
            "an integer >= 0",
        )
