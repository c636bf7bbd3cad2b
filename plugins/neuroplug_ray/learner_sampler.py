"""``scheduler=ray`` for learners: the shards of a learner's envs on long-lived Ray actors.

Each sampler actor (:class:`ShardActor`) is given a fixed run of shards when the run starts
(:mod:`neuroplug.rl.shards`: ``scheduler.envs_per_shard`` envs each, with their own
pool, seeds and action stream) and steps them for the whole run, as the local sampler
steps its envs: no episode is cut by a rollout or a segment. Per rollout the driver

1. puts the policy's acting snapshot (its weights after the last update) into Ray's object
   store once — one ``ray.put`` per policy version, fetched once per node, never sent per
   actor or per step;
2. asks every actor for one rollout of its shards with it;
3. puts each actor's shards, returned as numpy arrays, at their rows of the learner's
   rollout.

A shard samples the same bits wherever it runs, so a synchronous learner (``algo=ppo``)
ends in the same state for 1, 2 or more workers, and the same as
``scheduler=threaded scheduler.envs_per_shard=<same>`` (on the CPU).

Faults: an actor that dies is restarted by Ray; its shards' envs are gone, so they start
new episodes with seeds from the run's shard stream (:func:`neuroplug.runtime.seeds.
shard_restart_seeds`) and the rollout it owed is sampled again. The other actors' shards
are untouched; the run goes on (from there it is no longer the fault-free run's bits), and
the segment's ``algo/sampler_restarts`` and the log say what happened. A shard that fails
``scheduler.shard_retries`` times in a row stops the run with its checkpoint intact.
"""

from __future__ import annotations

import dataclasses
import pickle
import time

import numpy as np
import torch

from neuroplug.api import SamplerRequest
from neuroplug.rl.acting import Acting
from neuroplug.rl.sampler import Episodes, Rollout
from neuroplug.rl.shards import ShardedSampler, ShardLayout, ShardSampling
from neuroplug.runtime.devices import flush_denormals, set_matmul_precision
from neuroplug.runtime.memory import keep_freed_memory
from neuroplug.runtime.seeds import shard_restart_seeds

ROLLOUT_FIELDS = (
    "observations",
    "actions",
    "log_probs",
    "values",
    "rewards",
    "terminated",
    "ended",
    "valid",
)
"""The rollout's ``(T, N, ...)`` fields, joined along the env axis."""
CORE_FIELDS = ("states", "starts")
"""Its ``(T, N, ...)`` fields with a recurrent core (None without one)."""
PER_ENV_FIELDS = ("next_values", "last_observations")
"""Its ``(N, ...)`` fields."""
RESTART_SECONDS = 120.0
"""How long a dead sampler actor may take to come back (Ray restarts it) before the run
stops."""


class ShardActor:
    """The body of one sampler actor: its shards' envs, for the whole run."""

    def __init__(
        self,
        request: SamplerRequest,
        layout: ShardLayout,
        shards: list[int],
        threads: int,
        matmul_precision: str = "highest",
    ) -> None:
        torch.set_num_threads(max(1, threads))
        flush_denormals()  # as the run's own process computes
        keep_freed_memory()
        set_matmul_precision(matmul_precision)
        self.sampling = ShardSampling(request, layout, shards)
        self._acting_key: int | None = None
        self._acting: Acting | None = None

    def ready(self) -> bool:
        """Whether the envs are built (False after Ray restarted this actor)."""
        return self.sampling.sampler.started

    def start(self, seeds: np.ndarray, segment: int) -> float:
        """Build the shards' envs (``seeds``: one per env of the learner's) and seed the
        shards' generators for ``segment``; returns the seconds it took."""
        started = time.perf_counter()
        self.sampling.start(seeds)
        self.sampling.start_segment(segment)
        return time.perf_counter() - started

    def start_segment(self, segment: int) -> None:
        """Seed the shards' generators for ``segment``."""
        self.sampling.start_segment(segment)

    def rollout(self, key: int, acting_ref: list, length: int) -> dict:
        """One rollout of ``length`` steps of these shards with policy version ``key``;
        ``acting_ref`` is ``[ObjectRef]`` (wrapped, so Ray fetches it only here, once per
        version). Returns numpy arrays and the games that ended."""
        if key != self._acting_key:
            import ray  # only ever imported inside a Ray worker

            # The driver put the snapshot pickled once (and counted those bytes).
            self._acting, self._acting_key = pickle.loads(ray.get(acting_ref[0])), key
        sampler = self.sampling.sampler
        before = (sampler.env_steps, sampler.forward_passes)
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)
        rollout, episodes = self.sampling.rollout(self._acting, length)
        arrays = {
            name: getattr(rollout, name).numpy()
            for name in ROLLOUT_FIELDS + CORE_FIELDS + PER_ENV_FIELDS
            if getattr(rollout, name) is not None
        }
        return {
            **arrays,
            "self_play": rollout.self_play,  # self-play's records and who learns, or None
            "episodes": (episodes.returns, episodes.lengths, episodes.envs, episodes.trained),
            "env_steps": sampler.env_steps - before[0],
            "forward_passes": sampler.forward_passes - before[1],
            "timings": dict(sampler.timings),
        }


class RayShards(ShardedSampler):
    """The driver's side: the actors, one acting snapshot per version, the rollouts joined."""

    def __init__(
        self,
        request: SamplerRequest,
        layout: ShardLayout,
        ray,
        workers: int,
        cpus_per_worker: float,
        shard_retries: int,
    ) -> None:
        super().__init__(request, layout)
        self.ray = ray
        self.shard_retries = shard_retries
        self.assignment = [
            [int(shard) for shard in shards]
            for shards in np.array_split(np.arange(layout.count), workers)
        ]
        threads = max(1, int(cpus_per_worker))
        worker_request = dataclasses.replace(
            request, device=torch.device("cpu"), env_threads=threads
        )
        remote = ray.remote(ShardActor).options(
            num_cpus=cpus_per_worker, max_restarts=-1, max_task_retries=0
        )
        # run.matmul_precision, set in this process when the run was built.
        precision = torch.get_float32_matmul_precision()
        self.actors = [
            remote.remote(worker_request, layout, shards, threads, precision)
            for shards in self.assignment
        ]
        self.seeds: np.ndarray | None = None
        self.segment = 0
        self.version = 0
        self.restarts = 0
        self._in_flight: dict = {}
        """Asynchronous sampling: each actor's rollout in flight -> (actor, version)."""
        self._failures: dict[int, int] = {}
        self._published: tuple | None = None

    @property
    def started(self) -> bool:
        return self.seeds is not None

    def describe(self) -> str:
        layout = self.layout
        return (
            f"envs in {layout.count} shards of {layout.envs_per_shard} on "
            f"{len(self.actors)} Ray sampler actors"
        )

    def start(self, seeds: np.ndarray) -> None:
        self.seeds = np.asarray(seeds).copy()
        started = time.perf_counter()
        self._on_every_actor("start", self.seeds, self.segment)
        self.timings["env_setup"] = self.timings.get("env_setup", 0.0) + (
            time.perf_counter() - started
        )

    def start_segment(self, segment: int) -> None:
        self.segment = segment
        self.stats = {"bytes_sent": 0.0, "bytes_received": 0.0, "restarts": 0.0}
        if self.started:
            self._on_every_actor("start_segment", segment)

    def _on_every_actor(self, method: str, *arguments) -> None:
        """Call ``method`` on every actor and wait; an actor that died meanwhile is given
        new envs instead (which also seeds its shards for the segment)."""
        tasks = {
            getattr(actor, method).remote(*arguments): w for w, actor in enumerate(self.actors)
        }
        for task, worker in tasks.items():
            try:
                self.ray.get(task)
            except Exception:  # a dead actor: Ray restarts it
                if self.seeds is None:
                    raise
                self._restart(worker)

    def rollout(self, acting: Acting, length: int) -> Rollout:
        ray = self.ray
        started = time.perf_counter()
        self.version -= 1  # keys of their own: the asynchronous path keys by policy version
        reference = self._put(acting)
        self.stats["policy_lag"] = 0.0  # every actor samples with the newest weights
        parts: list[dict | None] = [None] * len(self.actors)
        failures = [0] * len(self.actors)
        waiting = {
            self.actors[w].rollout.remote(self.version, [reference], length): w
            for w in range(len(self.actors))
        }
        while waiting:
            done, _ = ray.wait(list(waiting), num_returns=1)
            worker = waiting.pop(done[0])
            try:
                parts[worker] = ray.get(done[0])
            except Exception as error:  # the actor died: Ray restarts it, its shards begin anew
                failures[worker] += 1
                if failures[worker] > self.shard_retries:
                    raise RuntimeError(
                        f"the sampler actor of shards {self.assignment[worker]} failed "
                        f"{failures[worker]} times in one rollout; last error: {error}"
                    ) from error
                self._restart(worker)
                task = self.actors[worker].rollout.remote(self.version, [reference], length)
                waiting[task] = worker
        return self._join(parts, time.perf_counter() - started)

    asynchronous = True
    """Offers :meth:`rollout_as_ready`: actors that sample on while the learner learns."""

    def rollout_as_ready(self, acting: Acting, version: int, length: int) -> Rollout:
        """Asynchronous sampling (``algo=appo``): a rollout of as many envs as the learner
        has, made of the actors' rollouts that come back first (an actor that is ahead may
        give two), with ``policy_version`` the oldest weights among them. Each actor keeps
        one rollout in flight: one that came back is at once sent the newest weights
        (``acting`` at ``version``, put into the object store once) and samples on while
        the learner learns. V-trace, or the lag bound, handles the older parts, as locally."""
        ray = self.ray
        started = time.perf_counter()
        reference = self._published_reference(acting, version)
        busy = {worker for worker, _ in self._in_flight.values()}
        for worker in range(len(self.actors)):
            if worker not in busy:
                self._send(worker, reference, length)
        parts, versions, envs = [], [], 0
        while envs < self.num_envs:
            done, _ = ray.wait(list(self._in_flight), num_returns=1)
            worker, sent_version = self._in_flight.pop(done[0])
            try:
                part = ray.get(done[0])
            except Exception as error:  # the actor died: Ray restarts it, its shards begin anew
                self._failures[worker] = self._failures.get(worker, 0) + 1
                if self._failures[worker] > self.shard_retries:
                    raise RuntimeError(
                        f"the sampler actor of shards {self.assignment[worker]} failed "
                        f"{self._failures[worker]} times in a row; last error: {error}"
                    ) from error
                self._restart(worker)
                self._send(worker, reference, length)
                continue
            self._failures[worker] = 0
            self._send(worker, reference, length)  # samples on with the newest weights
            parts.append(part)
            versions.append(sent_version)
            envs += part["next_values"].shape[0]
        rollout = self._join(parts, time.perf_counter() - started)
        rollout.policy_version = min(versions)
        return rollout

    def _published_reference(self, acting: Acting, version: int):
        """The object-store reference of the weights at ``version`` (one put per version)."""
        if self._published is None or self._published[0] != version:
            self._published = (version, self._put(acting))
        return self._published

    def _put(self, acting: Acting):
        """``acting``'s snapshot into the object store, once; its pickled size is what the
        segment's ``bytes_sent`` counts (the weights and their layout)."""
        data = pickle.dumps(acting.snapshot(), protocol=pickle.HIGHEST_PROTOCOL)
        self.stats["bytes_sent"] = self.stats.get("bytes_sent", 0.0) + len(data)
        return self.ray.put(data)

    def _send(self, worker: int, reference: tuple, length: int) -> None:
        version, ref = reference
        self._in_flight[self.actors[worker].rollout.remote(version, [ref], length)] = (
            worker,
            version,
        )

    def _restart(self, worker: int) -> None:
        """Give a restarted actor's shards new envs, seeded from the run's shard stream."""
        self.restarts += 1
        seeds = self.seeds.copy()
        for shard in self.assignment[worker]:
            rows = self.layout.rows(shard)
            seeds[rows] = shard_restart_seeds(
                self.request.run_seed, self.segment, shard, self.restarts, rows.stop - rows.start
            )
        deadline = time.monotonic() + RESTART_SECONDS
        while True:  # until Ray has the actor back
            try:
                self.ray.get(self.actors[worker].start.remote(seeds, self.segment))
                break
            except Exception as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the sampler actor of shards {self.assignment[worker]} did not come "
                        f"back within {RESTART_SECONDS:.0f} s: {error}"
                    ) from error
                time.sleep(0.5)
        self.stats["restarts"] = self.stats.get("restarts", 0.0) + 1
        self.notices.append(
            f"a sampler actor (shards {self.assignment[worker]}) died and was replaced in "
            f"segment {self.segment}: its envs started new episodes and its rollout was "
            "sampled again; the other shards went on"
        )

    def _join(self, parts: list[dict], seconds: float) -> Rollout:
        """The learner's rollout from the actors' shards (each at its rows), on its device."""
        device = self.request.device
        received = 0

        def joined(name: str, axis: int) -> torch.Tensor:
            nonlocal received
            arrays = [part[name] for part in parts]
            received += sum(array.nbytes for array in arrays)
            return torch.from_numpy(np.concatenate(arrays, axis=axis)).to(device)

        fields = {
            name: joined(name, 1) for name in ROLLOUT_FIELDS + CORE_FIELDS if name in parts[0]
        }
        fields.update({name: joined(name, 0) for name in PER_ENV_FIELDS})
        for part in parts:
            returns, lengths, envs, trained = part["episodes"]
            self.episodes.extend(Episodes(list(returns), list(lengths), list(envs), list(trained)))
            self.env_steps += part["env_steps"]
            self.forward_passes += part["forward_passes"]
        for name in ("env", "inference"):
            slowest = max(part["timings"].get(name, 0.0) for part in parts)
            self.timings[name] = self.timings.get(name, 0.0) + slowest
        self.timings["sample_wait"] = self.timings.get("sample_wait", 0.0) + seconds
        self.stats["bytes_received"] = self.stats.get("bytes_received", 0.0) + received
        played = [part["self_play"] for part in parts]
        if played[0] is not None:  # self-play: the shards' records, in the envs' order
            fields["self_play"] = type(played[0]).joined(played)
        return Rollout(**fields)

    def close(self) -> None:
        self._in_flight = {}
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        self.actors = []
