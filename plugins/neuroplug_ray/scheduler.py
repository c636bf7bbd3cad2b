"""``scheduler=ray``: the lockstep engine on Ray actors, with the same results on any number.

Per evaluation round the driver puts the population's description into Ray's object store
once (:mod:`neuroplug_ray.shipping`: bases, indices, scales and seeds; the deep GA's
parents as indices into the previous generation) and hands out *shards* — runs of
``scheduler.members_per_shard`` consecutive members with all their episodes — to
long-lived evaluator actors (:mod:`neuroplug_ray.worker`). A shard call carries the
population's key, a reference and a member range. Shards do not depend on how many
workers there are or which one plays which, and the driver puts every shard's
per-episode record in place and reduces in item order, so:

- a run's results (and final checkpoint) are bit-identical for 1, 2 or more workers;
- when every episode has its own env slot (``P x E`` within the lanes, ``scheduler.max_envs``
  or the env family's ``engine_lanes``) they are
  bit-identical to ``scheduler=threaded``;
- a worker that dies mid-round has its shards re-run on the others with the same seeds
  (Ray restarts it), so the result is the same as without the fault. A shard that fails
  ``scheduler.shard_retries`` times fails the round, which the trainer retries and, failing
  that, stops with the checkpoint intact.

Ray is started by the scheduler (embedded, ``scheduler.num_workers`` x
``scheduler.cpus_per_worker`` CPUs, no dashboard) unless ``scheduler.address`` (or
``RAY_ADDRESS``) names a running cluster to join, or Ray is already initialised in this
process. neuroplug's Ctrl-C / SIGTERM handlers are kept (Ray installs its own).
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import signal
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from neuroplug.api import Backend, EvaluationRequest, EvaluationResult, SamplerRequest
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, require
from neuroplug.evaluation.behaviors import resolve
from neuroplug.evaluation.episodes import EpisodeLedger
from neuroplug.evaluation.lockstep import LockstepScheduler
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.rl.shards import shard_layout
from neuroplug.runtime.stop_signals import STOP_SIGNALS
from neuroplug_ray.learner_sampler import RayShards
from neuroplug_ray.scheduler_config import RaySchedulerConfig
from neuroplug_ray.shipping import KEPT_POPULATIONS, MissingPopulation, ship
from neuroplug_ray.worker import Evaluator, EvaluatorSettings


def _import_ray():
    try:
        import ray
    except ImportError as error:
        raise ConfigError(
            "scheduler", "is ray but Ray is not installed", "pip install 'neuroplug[ray]'"
        ) from error
    return ray


@dataclass
class _Shard:
    first_member: int
    end_member: int
    attempts: int = 0


class RayScheduler(LockstepScheduler):
    """Plays a population's shards on Ray evaluator actors."""

    config_class = RaySchedulerConfig

    def __init__(self, config: RaySchedulerConfig, env: EnvSpec) -> None:
        super().__init__(config, env)
        self._ray = None
        self._owns_ray = False
        self._actors: list = []
        self._keys = 0
        self._sent: OrderedDict[tuple[int, int, int], tuple[int, Population]] = OrderedDict()
        """Populations sent to the workers, by identity, with their keys (strong
        references keep the identities valid)."""
        self._learner_sampling = False
        """Whether this run is a learner's (its envs on sampler actors)."""
        self.dispatch_hook: Callable[[int, object, int], None] | None = None
        """Called as ``hook(worker_index, actor, first_member)`` right after a shard is sent
        to a worker (tests use it to kill a worker while it has work)."""

    # ------------------------------------------------------------------ start and stop

    def _start(self, policy: Policy, backend: Backend) -> None:
        if self._actors:
            return
        ray = self._connect()
        config = self.config
        threads = max(1, int(config.cpus_per_worker))
        settings = EvaluatorSettings(
            env=self.env,
            network=backend.network,
            backend=backend.config,
            normalize_observations=policy.normalizer is not None,
            max_envs=config.max_envs,
            groups=config.groups,
            env_threads=config.env_threads or threads,
            torch_threads=threads,
            # run.matmul_precision, set in this process when the run was built.
            matmul_precision=torch.get_float32_matmul_precision(),
        )
        remote = ray.remote(Evaluator).options(
            num_cpus=config.cpus_per_worker,
            num_gpus=config.gpus_per_worker,
            max_restarts=-1,  # Ray restarts a dead worker; its shards are re-run elsewhere
            max_task_retries=0,
        )
        self._actors = [remote.remote(settings) for _ in range(config.num_workers)]

    def learner_sampler(self, request: SamplerRequest) -> RayShards:
        """A learner's envs in shards of ``scheduler.envs_per_shard`` on
        ``scheduler.num_workers`` sampler actors (:mod:`neuroplug_ray.learner_sampler`)."""
        config = self.config
        layout = shard_layout(request, config.envs_per_shard)
        require(
            config.num_workers <= layout.count,
            "scheduler.num_workers",
            f"{config.num_workers} sampler workers for {layout.count} shards "
            f"({request.num_envs} envs in shards of scheduler.envs_per_shard="
            f"{config.envs_per_shard}) would leave workers without envs",
            f"at most {layout.count} workers, more algo.num_envs or smaller shards",
        )
        require(
            config.gpus_per_worker == 0,
            "scheduler.gpus_per_worker",
            f"is {config.gpus_per_worker}, but a learner's sampler actors act on the CPU "
            "(the learner itself runs on the driver's algo.device)",
            "0",
        )
        ray = self._connect()
        self._learner_sampling = True
        return RayShards(
            request,
            layout,
            ray,
            config.num_workers,
            config.cpus_per_worker,
            config.shard_retries,
        )

    def _connect(self):
        """Ray, initialised (embedded, or joining ``scheduler.address``) and checked to
        hold the workers; returns the module."""
        if self._ray is not None:
            return self._ray
        ray = _import_ray()
        config = self.config
        if not ray.is_initialized():
            address = config.address or os.environ.get("RAY_ADDRESS")
            handlers = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
            try:
                if address:
                    _join(ray, address)
                else:
                    ray.init(
                        num_cpus=max(1, math.ceil(config.num_workers * config.cpus_per_worker)),
                        include_dashboard=False,
                        logging_level=logging.ERROR,
                        log_to_driver=False,
                    )
            finally:
                # Ray replaces them; Ctrl-C and SIGTERM must still checkpoint and stop.
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)
            self._owns_ray = True
        self._ray = ray
        self._check_resources(ray.cluster_resources())
        return ray

    def _check_resources(self, cluster: dict[str, float]) -> None:
        """Fail clearly, before any work is sent, when the workers cannot all be placed
        (Ray would queue the rest forever)."""
        config = self.config
        for resource, per_worker, field in (
            ("CPU", config.cpus_per_worker, "cpus_per_worker"),
            ("GPU", config.gpus_per_worker, "gpus_per_worker"),
        ):
            needed = config.num_workers * per_worker
            available = cluster.get(resource, 0.0)
            require(
                needed <= available + 1e-9,
                "scheduler.num_workers",
                f"{config.num_workers} workers x scheduler.{field}={per_worker} need "
                f"{needed:g} {resource}s but the Ray cluster has {available:g}",
                f"fewer workers or a smaller scheduler.{field}",
            )

    def close(self) -> None:
        super().close()  # the pools a learner's local evaluations kept
        if self._ray is None:
            return
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
        self._actors = []
        if self._owns_ray:
            self._ray.shutdown()
        self._ray = None

    # ------------------------------------------------------------------ one round

    def _shipment(self, population: Population, policy: Policy):
        """Put this round's population description into the object store once; returns
        (key, reference, bytes) and a builder of the dense fallback."""
        self._keys += 1
        key = self._keys
        normalizer = policy.normalizer.state_dict() if policy.normalizer is not None else None
        origin_key = None
        if population.origin is not None:
            sent = self._sent.get(_identity(population.origin.population))
            origin_key = sent[0] if sent is not None else None
        shipped = ship(key, population, normalizer, origin_key)
        self._sent[_identity(population)] = (key, population)
        while len(self._sent) > KEPT_POPULATIONS:
            self._sent.popitem(last=False)
        dense = ship(key, population, normalizer, None) if origin_key is not None else shipped
        return key, shipped, dense

    def evaluate(
        self,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
    ) -> EvaluationResult:
        if self._learner_sampling:
            # A learner's run: its sampler actors hold the workers' CPUs, and evaluating
            # one deployed policy is the driver's job, as the learner is (locally, on the
            # lockstep engine: the same games as scheduler=threaded plays).
            return super().evaluate(population, policy, backend, request)
        started = time.perf_counter()
        behavior = resolve(request.behavior, self.env) if request.behavior is not None else None
        ledger = EpisodeLedger(len(population), request, self.env.frame_skip, behavior)
        if len(ledger) == 0:
            return ledger.result()
        self._start(policy, backend)
        ray = self._ray
        progress, request = request.progress, replace(request, progress=None)  # stays here
        key, shipped, dense = self._shipment(population, policy)
        shipped_ref = ray.put(shipped)
        bytes_sent = shipped.size_bytes
        dense_ref = None
        size = self.config.members_per_shard
        # A multi-agent world's agents step together: a shard holds whole worlds.
        while size * request.episodes_per_member % self.env.lanes_per_env:
            size += 1
        pending = deque(
            _Shard(first, min(first + size, len(population)))
            for first in range(0, len(population), size)
        )
        shards = len(pending)
        idle = deque(range(len(self._actors)))
        in_flight: dict = {}  # object ref -> (worker index, shard, sent with dense bases)
        retries = 0
        episodes = request.episodes_per_member
        while pending or in_flight:
            while pending and idle:
                worker, shard = idle.popleft(), pending.popleft()
                use_dense = shard.attempts > 0 and dense_ref is not None
                reference = [dense_ref if use_dense else shipped_ref]
                arguments = (key, reference, request, shard.first_member, shard.end_member)
                bytes_sent += len(pickle.dumps(arguments, protocol=pickle.HIGHEST_PROTOCOL))
                actor = self._actors[worker]
                task = actor.evaluate_shard.remote(*arguments)
                in_flight[task] = (worker, shard)
                if self.dispatch_hook is not None:
                    self.dispatch_hook(worker, actor, shard.first_member)
            # A short wait, so Ctrl-C and SIGTERM are handled promptly.
            done, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.2)
            for task in done:
                worker, shard = in_flight.pop(task)
                try:
                    record = ray.get(task)
                except Exception as error:  # a dead worker or a failed shard: re-run it
                    missing = _missing_population(error)
                    if missing is not None and dense_ref is None:
                        dense_ref = ray.put(dense)
                        bytes_sent += dense.size_bytes
                    shard.attempts += 1
                    retries += 1
                    if shard.attempts > self.config.shard_retries:
                        raise RuntimeError(
                            f"shard of members [{shard.first_member}, {shard.end_member}) "
                            f"failed {shard.attempts} times; last error: {error}"
                        ) from error
                    pending.appendleft(shard)
                    idle.append(worker)  # Ray restarts a dead worker; others go first
                    continue
                items = slice(shard.first_member * episodes, shard.end_member * episodes)
                ledger.absorb(items, record)
                idle.append(worker)
                if progress is not None:
                    progress(ledger.episodes_done, len(ledger), ledger.env_steps)
        result = ledger.result()
        result.timings["wall"] = time.perf_counter() - started
        result.stats = {
            "bytes_sent": float(bytes_sent),
            "shards": float(shards),
            "shard_retries": float(retries),
            "workers": float(len(self._actors)),
        }
        return result


ADDRESS_HELP = (
    "the head's address as `ray start --head` printed it (host:6379), auto for a cluster "
    "started on this machine, or null for an embedded Ray"
)
CONNECT_SECONDS = 5.0
"""How long the head's port may take to answer before a run refuses to start (Ray itself
would wait for minutes)."""


def _join(ray, address: str) -> None:
    """``ray.init`` on a running cluster; an address where nothing answers fails at once,
    naming the field (Ray itself retries for minutes)."""
    if address != "auto" and not address.startswith("ray://"):
        host, _, port = address.rpartition(":") if ":" in address else (address, "", "6379")
        try:
            with socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS):
                pass
        except (OSError, ValueError) as error:
            raise ConfigError(
                "scheduler.address", f"nothing answers at {address} ({error})", ADDRESS_HELP
            ) from error
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    except ConnectionError as error:
        if "InvalidAuthToken" in repr(error.__cause__) + str(error.__cause__):
            raise ConfigError(
                "scheduler.address",
                f"the cluster at {address} uses token authentication (Ray >= 2.60 turns it on "
                "at `ray start --head`) and this process has no token",
                "RAY_AUTH_MODE=token in this process's environment, with the cluster's token "
                "in ~/.ray/auth_token (or RAY_AUTH_TOKEN)",
            ) from error
        raise ConfigError("scheduler.address", f"{address}: {error}", ADDRESS_HELP) from error


def _identity(population: Population) -> tuple[int, int, int]:
    """A population's identity: its index tensors (shared by ``to()`` and ``replace``)."""
    return id(population.base_index), id(population.scale), id(population.seed)


def _missing_population(error: Exception) -> int | None:
    """The key a worker said it lacks, if that is what ``error`` is."""
    cause = getattr(error, "cause", None)
    for candidate in (error, cause):
        if isinstance(candidate, MissingPopulation):
            return candidate.key
    return None
