"""Bookkeeping of a population's episodes, shared by every scheduler.

A scheduler plays *work items* — episode e of member m is item ``m * E + e`` — in whatever
order and grouping it likes; the ledger adds up their rewards and steps, the forward
passes, observation sums, phase timings and (when the request names one) each episode's
behavior characterisation, and turns them into an EvaluationResult.
Keeping this in one place is what lets different schedulers return identical results.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from neuroplug.api import EvaluationRequest, EvaluationResult, Transitions
from neuroplug.evaluation.behaviors import Behavior
from neuroplug.evaluation.transitions import concatenate_transitions, transition_rows
from neuroplug.nets.normalizer import ObservationStats


@dataclass
class LedgerShard:
    """What a ledger recorded for a contiguous range of work items: per-item arrays plus the
    range's counters. A scheduler that plays ranges elsewhere (another process, another
    machine) sends these back and :meth:`EpisodeLedger.absorb` puts them in place, so the
    sums the result reduces are taken in item order whoever played which range."""

    returns: np.ndarray
    invalid: np.ndarray
    lengths: np.ndarray
    ended: np.ndarray
    behaviors: np.ndarray | None
    obs_total: np.ndarray | None
    obs_total_squares: np.ndarray | None
    obs_count: int
    forward_passes: int
    timings: dict[str, float]
    transitions: list[Transitions] | None = None
    """The steps played, in recorded chunks (when the request asked for them)."""
    transition_order: list[np.ndarray] | None = None
    """Each chunk's rows' (item, step) keys, which order them in the result."""


class EpisodeLedger:
    """Returns, lengths, counters and behaviors of the episodes of one evaluation.

    ``behavior`` is ``request.behavior`` resolved for the env
    (:func:`neuroplug.evaluation.behaviors.resolve`); the ledger refuses a request that names a
    behavior without it, so a scheduler cannot silently drop one.
    """

    def __init__(
        self,
        population_size: int,
        request: EvaluationRequest,
        frame_skip: int,
        behavior: Behavior | None = None,
    ) -> None:
        if (request.behavior is None) != (behavior is None):
            raise ValueError(
                f"request.behavior is {request.behavior!r} but the ledger got "
                f"{behavior!r}; pass neuroplug.evaluation.behaviors.resolve(request.behavior, env)"
            )
        self.population_size = population_size
        self.episodes_per_member = request.episodes_per_member
        self.frame_skip = frame_skip
        items = population_size * request.episodes_per_member
        self.member = np.repeat(np.arange(population_size), request.episodes_per_member)
        """Member of each work item."""
        self.episode = (
            np.tile(np.arange(request.episodes_per_member), population_size)
            if request.episodes is None
            else np.asarray(request.episodes, np.int64)
        )
        """Episode index (within its member, or the request's) of each work item."""
        if len(self.episode) != items:
            raise ValueError(
                f"request.episodes holds {len(self.episode)} indices for {items} work items"
            )
        self.returns = np.zeros(items, dtype=np.float64)
        self._invalid = np.zeros(items, dtype=bool)
        self.lengths = np.zeros(items, dtype=np.int64)
        self.forward_passes = 0
        self.timings: dict[str, float] = {"env": 0.0, "inference": 0.0}
        self._collect = request.collect_obs_stats
        self._obs_total: np.ndarray | None = None
        self._obs_total_squares: np.ndarray | None = None
        self._obs_count = 0
        self.behavior = behavior
        self._behaviors = np.zeros((items, behavior.size)) if behavior is not None else None
        self._ended = np.zeros(items, dtype=bool)
        self._transitions: list[Transitions] | None = [] if request.transitions else None
        self._transition_order: list[np.ndarray] = []
        """Per recorded chunk, each row's (item, step) as one sortable key."""

    def __len__(self) -> int:
        return len(self.member)

    @property
    def episodes_done(self) -> int:
        """Episodes that have ended so far."""
        return int(self._ended.sum())

    @property
    def env_steps(self) -> int:
        """Agent steps taken so far."""
        return int(self.lengths.sum())

    @contextmanager
    def timing(self, phase: str):
        """Add the time spent in the ``with`` block to ``phase``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[phase] = self.timings.get(phase, 0.0) + time.perf_counter() - started

    def record_invalid(self, items: np.ndarray) -> None:
        """These episodes' networks produced NaN/inf: their returns become NaN, which the
        algorithms score as worst (and count), instead of whatever argmax(NaN) happened to do."""
        self._invalid[items] = True

    def record_step(self, items: np.ndarray, rewards: np.ndarray) -> None:
        """One agent step of each of ``items`` (alive episodes) with these rewards."""
        self.returns[items] += rewards
        self.lengths[items] += 1

    @property
    def wants_transitions(self) -> bool:
        """Whether the request asked for every step's transition."""
        return self._transitions is not None

    def record_transitions(
        self,
        items: np.ndarray,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_observations: np.ndarray,
        terminated: np.ndarray,
    ) -> None:
        """One step of each of ``items``, before :meth:`record_step` counts it (its index
        in the episode is the item's length so far)."""
        if self._transitions is None or len(items) == 0:
            return
        self._transitions.append(
            Transitions(
                observations.copy(),
                actions.copy(),
                rewards.astype(np.float32),
                next_observations.copy(),
                terminated.astype(bool),
                self.member[items].astype(np.int64),
            )
        )
        self._transition_order.append(items.astype(np.int64) << 32 | self.lengths[items])

    def _played_transitions(self) -> Transitions | None:
        """Every transition recorded, ordered by item and step: the same order whichever
        schedule (or shard) played them."""
        if not self._transitions:
            return None
        everything = concatenate_transitions(self._transitions)
        order = np.argsort(np.concatenate(self._transition_order), kind="stable")
        return transition_rows(everything, order)

    def record_ends(
        self, items: np.ndarray, observations: np.ndarray, info: dict, rows: np.ndarray
    ) -> None:
        """Episodes ``items`` ended at this step; their final observation and info are at
        batch rows ``rows`` of ``observations``/``info`` (EnvPool's step that reports done
        still carries them). Records their behaviors, if the request asked for one."""
        self._ended[items] = True
        if self._behaviors is not None and len(items):
            self._behaviors[items] = self.behavior.extract(observations, info, rows)

    def record_inference(self, items: np.ndarray, observations: np.ndarray) -> None:
        """One forward pass for each of ``items`` on its row of ``observations`` (kept for
        the normalizer if asked).

        Sums are kept per episode and added up in episode order at the end, so they come
        out bit-identical however a scheduler batched the steps.
        """
        self.forward_passes += len(observations)
        if not self._collect or len(observations) == 0:
            return
        values = observations.reshape(len(observations), -1).astype(np.float64)
        if self._obs_total is None:
            self._obs_total = np.zeros((len(self), values.shape[1]))
            self._obs_total_squares = np.zeros((len(self), values.shape[1]))
        # Items within one call are distinct, so plain fancy-index addition is exact.
        self._obs_total[items] += values
        self._obs_total_squares[items] += np.square(values)
        self._obs_count += len(values)

    def shard(self, items: slice) -> LedgerShard:
        """The record of work items ``items`` (a range this ledger's owner played alone)."""

        def part(array: np.ndarray | None) -> np.ndarray | None:
            return None if array is None else array[items].copy()

        return LedgerShard(
            returns=self.returns[items].copy(),
            invalid=self._invalid[items].copy(),
            lengths=self.lengths[items].copy(),
            ended=self._ended[items].copy(),
            behaviors=part(self._behaviors),
            obs_total=part(self._obs_total),
            obs_total_squares=part(self._obs_total_squares),
            obs_count=self._obs_count,
            forward_passes=self.forward_passes,
            timings=dict(self.timings),
            transitions=None if self._transitions is None else list(self._transitions),
            transition_order=list(self._transition_order),
        )

    def absorb(self, items: slice, shard: LedgerShard) -> None:
        """Put a shard played elsewhere in place (its items must not have been played here)."""
        self.returns[items] = shard.returns
        self._invalid[items] = shard.invalid
        self.lengths[items] = shard.lengths
        self._ended[items] = shard.ended
        if self._behaviors is not None and shard.behaviors is not None:
            self._behaviors[items] = shard.behaviors
        if shard.obs_total is not None:
            if self._obs_total is None:
                width = shard.obs_total.shape[1]
                self._obs_total = np.zeros((len(self), width))
                self._obs_total_squares = np.zeros((len(self), width))
            self._obs_total[items] = shard.obs_total
            self._obs_total_squares[items] = shard.obs_total_squares
        self._obs_count += shard.obs_count
        if self._transitions is not None and shard.transitions:
            # A shard numbers its items and members from 0 (it played a population of its
            # own): shift them to where its range sits here.
            first_item = items.start or 0
            first_member = first_item // self.episodes_per_member
            for chunk, order in zip(shard.transitions, shard.transition_order, strict=True):
                chunk.members = chunk.members + first_member
                self._transitions.append(chunk)
                self._transition_order.append(order + (first_item << 32))
        self.forward_passes += shard.forward_passes
        for phase, seconds in shard.timings.items():
            self.timings[phase] = self.timings.get(phase, 0.0) + seconds

    def result(self) -> EvaluationResult:
        """The evaluation's result: ``(P, E)`` returns and lengths plus honest counters."""
        env_steps = int(self.lengths.sum())
        stats = None
        if self._collect and self._obs_total is not None:
            stats = ObservationStats(
                self._obs_total.sum(axis=0), self._obs_total_squares.sum(axis=0), self._obs_count
            )
        shape = (self.population_size, self.episodes_per_member)
        behaviors = None
        if self._behaviors is not None:
            if not self._ended.all():
                missing = int((~self._ended).sum())
                raise RuntimeError(f"{missing} episodes never reported their end (record_ends)")
            behaviors = self._behaviors.reshape(*shape, -1)
        return EvaluationResult(
            returns=np.where(self._invalid, np.nan, self.returns).reshape(shape),
            lengths=self.lengths.reshape(shape),
            env_steps=env_steps,
            frames=env_steps * self.frame_skip,
            forward_passes=self.forward_passes,
            obs_stats=stats,
            behaviors=behaviors,
            transitions=self._played_transitions(),
            timings=dict(self.timings),
        )
