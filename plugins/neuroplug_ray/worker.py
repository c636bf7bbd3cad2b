"""The evaluator a Ray actor runs: built once, then plays shards of episodes.

Each evaluator builds its network's backend and policy once (from the run's resolved
settings, sent when the actor starts) and keeps the populations it was sent
(:class:`~neuroplug_ray.shipping.WorkerPopulations`). A shard is a run of consecutive
members with all their episodes; it is played on the lockstep engine exactly as the
threaded (or, with ``groups >= 2``, pipelined) scheduler plays a whole population, and
its per-episode record goes back to the driver, which reduces every shard in item order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neuroplug import registry
from neuroplug.api import BackendConfig, EvaluationRequest
from neuroplug.envs.spec import EnvSpec
from neuroplug.evaluation.episodes import LedgerShard
from neuroplug.evaluation.lockstep import LockstepEvaluation, PoolCache
from neuroplug.nets.network import Network
from neuroplug.nets.policy import Policy
from neuroplug.runtime.devices import flush_denormals, set_matmul_precision
from neuroplug.runtime.memory import keep_freed_memory
from neuroplug_ray.shipping import ShippedPopulation, WorkerPopulations


@dataclass(frozen=True)
class EvaluatorSettings:
    """What every evaluator is built from (sent once, when its actor starts)."""

    env: EnvSpec
    network: Network
    backend: BackendConfig
    normalize_observations: bool
    max_envs: int | None
    groups: int
    env_threads: int
    torch_threads: int
    matmul_precision: str = "highest"
    """The run's ``run.matmul_precision``, as the driver set it."""


class Evaluator:
    """Plays shards of a population's episodes (the body of one Ray actor)."""

    def __init__(self, settings: EvaluatorSettings) -> None:
        self.settings = settings
        torch.set_num_threads(max(1, settings.torch_threads))
        flush_denormals()  # as the run's own process computes
        keep_freed_memory()
        set_matmul_precision(settings.matmul_precision)
        backend_class = registry.load("backends", settings.backend.name)
        self.backend = backend_class(settings.backend, settings.network)
        self.policy = Policy(settings.network, settings.env, settings.normalize_observations)
        self.populations = WorkerPopulations()
        # Atari pools stay built between shards (see neuroplug.evaluation.lockstep.PoolCache).
        self.pool_cache = PoolCache()

    def evaluate_shard(
        self,
        key: int,
        shipped_ref: list,
        request: EvaluationRequest,
        first_member: int,
        end_member: int,
    ) -> LedgerShard:
        """Play every episode of members ``[first_member, end_member)`` of population
        ``key``. ``shipped_ref`` is ``[ObjectRef]`` (wrapped, so Ray does not fetch it for a
        worker that already holds the population)."""
        if key not in self.populations:
            import ray  # only ever imported inside a Ray worker

            shipped: ShippedPopulation = ray.get(shipped_ref[0])
            self.populations.hold(shipped)
            if shipped.normalizer is not None and self.policy.normalizer is not None:
                self.policy.normalizer.load_state_dict(shipped.normalizer)
        population = self.populations.get(key)
        members = np.arange(first_member, end_member)
        settings = self.settings
        evaluation = LockstepEvaluation(
            settings.env,
            population.subset(members),
            self.policy,
            self.backend,
            request.for_members(first_member, end_member),
            max_envs=settings.max_envs,
            groups=settings.groups,
            env_threads=settings.env_threads,
            first_member=first_member,
            pool_cache=self.pool_cache,
        )
        ledger = evaluation.play()
        return ledger.shard(slice(None))
