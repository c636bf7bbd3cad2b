"""A learner's envs in shards, so where they are stepped never changes what they sample.

A shard is ``scheduler.envs_per_shard`` consecutive envs of a learner's (or a population's)
envs. Everything a shard samples is its own:

- its EnvPool, holding the shard's envs alone, seeded by env index from the run's stream
  (:func:`neuroplug.runtime.seeds.segment_episode_seeds`, as the unsharded sampler seeds them);
- its action-sampling generator, seeded from (run seed, segment, shard)
  (:func:`neuroplug.runtime.seeds.shard_generator_seed`);
- one policy forward per step over its envs alone;
- with a recurrent core, its envs' states, kept from step to step and rollout to rollout,
  and stored in its rollouts (the states each step acted from).

So a shard's rollout is the same bits whether this process steps it beside every other
shard (:class:`LocalShards`, ``envs_per_shard`` on a local scheduler) or a Ray actor steps
it beside any others (``scheduler=ray``): a synchronous learner ends in the same state for
any number of workers, and the same as locally with the same shards (on the CPU). The
learner's own streams (minibatch order) stay the learner's.

The policy a shard acts with is a
:class:`~neuroplug.rl.acting.Acting` (a single learner is a
population of one), refreshed after each update: locally the object itself; remotely its
:meth:`~neuroplug.rl.acting.Acting.snapshot`, shipped once per
version.

:class:`ShardSampling` is the part both run: the shards one process steps, as one
:class:`~neuroplug.rl.sampler.Sampler` whose groups are exactly those shards (one
stepping while another's observations go through the policy).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from neuroplug.api import LearnerContext, SamplerRequest
from neuroplug.errors import require
from neuroplug.rl.acting import Acted, Acting
from neuroplug.rl.sampler import Episodes, Rollout, Sampler
from neuroplug.runtime.seeds import shard_generator_seed


@dataclass(frozen=True)
class ShardLayout:
    """How a learner's ``num_envs`` envs fall into shards of ``envs_per_shard``."""

    num_envs: int
    envs_per_shard: int

    @property
    def count(self) -> int:
        """The number of shards."""
        return self.num_envs // self.envs_per_shard

    def rows(self, shard: int) -> slice:
        """Shard ``shard``'s envs among the learner's."""
        return slice(shard * self.envs_per_shard, (shard + 1) * self.envs_per_shard)


def shard_layout(request: SamplerRequest, envs_per_shard: int) -> ShardLayout:
    """The shards of ``request``'s envs; a size that cannot hold fails, naming the field."""
    field = "scheduler.envs_per_shard"
    require(envs_per_shard >= 1, field, f"got {envs_per_shard}", "an integer >= 1")
    require(
        request.num_envs % envs_per_shard == 0,
        field,
        f"{envs_per_shard} does not divide the learner's {request.num_envs} envs",
        "a divisor of algo.num_envs (every shard the same size)",
    )
    unit = request.unit
    require(
        unit % envs_per_shard == 0 or envs_per_shard % unit == 0,
        field,
        f"{envs_per_shard} envs per shard would split a population member's {unit} envs unevenly",
        f"a divisor or a multiple of algo.member.num_envs={unit}",
    )
    return ShardLayout(request.num_envs, envs_per_shard)


class ShardSampling:
    """The shards one process steps: a :class:`Sampler` whose groups are exactly these
    shards, each acting with its own generator."""

    def __init__(self, request: SamplerRequest, layout: ShardLayout, shards: Sequence[int]) -> None:
        self.layout = layout
        self.shards = list(shards)
        self.run_seed = request.run_seed
        size = layout.envs_per_shard
        # Groups are exactly these shards: one pool and one forward per shard.
        self.sampler = Sampler.for_request(
            dataclasses.replace(
                request, num_envs=size * len(self.shards), groups=len(self.shards), unit=size
            )
        )
        self.generators = {shard: torch.Generator(request.device) for shard in self.shards}
        # Row r of this process's envs is env global_env[r] of the learner's.
        self.global_env = np.concatenate(
            [np.arange(layout.num_envs)[layout.rows(shard)] for shard in self.shards]
        )
        self.self_play_seatings: list | None = None
        """Self-play's seatings of these shards' worlds (:mod:`neuroplug.rl.self_play.
        seating`), built by the first rollout whose acting plays games."""
        self.segment = 0

    def start(self, seeds: np.ndarray) -> None:
        """Build the shards' envs, each env seeded with ``seeds[env]`` (``seeds`` holds one
        seed per env of the learner's), and reset them."""
        self.sampler.start(np.asarray(seeds)[self.global_env])
        for seating in self.self_play_seatings or ():
            seating.envs_started()

    def start_segment(self, segment: int) -> None:
        """Seed each shard's generator (and self-play's draws) for ``segment``."""
        self.segment = segment
        for shard, generator in self.generators.items():
            generator.manual_seed(shard_generator_seed(self.run_seed, segment, shard))
        for seating in self.self_play_seatings or ():
            seating.start_segment(segment)

    def rollout(self, acting: Acting, length: int) -> tuple[Rollout, Episodes]:
        """``length`` steps of these shards with ``acting``; the games that ended, with the
        learner's env indices. An acting that plays games (self-play) seats these shards'
        worlds here, and its records come back as the rollout's ``self_play``."""
        size = self.layout.envs_per_shard

        def act(observations: torch.Tensor, rows: slice, states: torch.Tensor | None) -> Acted:
            shard = self.shards[rows.start // size]
            return acting.act(observations, self.layout.rows(shard), states, self.generators[shard])

        playing = getattr(acting, "plays_games", False)
        if playing:
            acting.begin(self.global_env, self)
            self.sampler.step_watcher = lambda rows, batch: acting.watch(
                self.layout.rows(self.shards[rows.start // size]), batch
            )
        try:
            rollout = self.sampler.rollout_with(act, length)
        finally:
            self.sampler.step_watcher = None
        if playing:
            rollout.self_play = acting.finish(
                [self.layout.rows(shard) for shard in self.shards], length
            )
        episodes = self.sampler.take_episodes()
        episodes.envs = self.global_env[np.asarray(episodes.envs, dtype=np.int64)].tolist()
        return rollout, episodes

    def close(self) -> None:
        """Close the shards' pools."""
        self.sampler.close()


class ShardedSampler(ABC):
    """What a learner samples through when its envs are in shards: the local sampler's
    counters and life cycle, with rollouts acted by a
    :class:`~neuroplug.rl.acting.Acting`."""

    def __init__(self, request: SamplerRequest, layout: ShardLayout) -> None:
        self.request = request
        self.layout = layout
        self.num_envs = request.num_envs
        self.env_steps = 0
        self.forward_passes = 0
        self.timings: dict[str, float] = {"env": 0.0, "inference": 0.0, "env_setup": 0.0}
        self.stats: dict[str, float] = {}
        """Per-segment numbers of the sampling itself (bytes shipped, restarts), logged as
        ``algo/sampler_*``."""
        self.episodes = Episodes()
        self.notices: list[str] = []
        """What the run's log should say once (a replaced Ray sampler actor, say)."""

    @property
    @abstractmethod
    def started(self) -> bool:
        """Whether the envs are built."""

    @abstractmethod
    def start(self, seeds: np.ndarray) -> None:
        """Build every shard's envs (one seed per env) and reset them."""

    @abstractmethod
    def start_segment(self, segment: int) -> None:
        """Seed every shard's generator for ``segment``."""

    @abstractmethod
    def rollout(self, acting: Acting, length: int) -> Rollout:
        """``length`` steps of every env, acted by ``acting`` (refreshed by the caller)."""

    def take_episodes(self) -> Episodes:
        """The games completed since the last call."""
        episodes, self.episodes = self.episodes, Episodes()
        return episodes

    @abstractmethod
    def close(self) -> None:
        """Stop sampling and close the envs."""

    def describe(self) -> str:
        """Where the shards are stepped, for the start-up line."""
        layout = self.layout
        return f"envs in {layout.count} shards of {layout.envs_per_shard}, in this process"


class LocalShards(ShardedSampler):
    """Every shard in this process (``scheduler.envs_per_shard`` on a local scheduler):
    the reference the Ray scheduler's sampler is the same bits as."""

    def __init__(self, request: SamplerRequest, layout: ShardLayout) -> None:
        super().__init__(request, layout)
        self.sampling = ShardSampling(request, layout, range(layout.count))

    @property
    def started(self) -> bool:
        return self.sampling.sampler.started

    def start(self, seeds: np.ndarray) -> None:
        self.sampling.start(seeds)
        self._take_timings()

    def start_segment(self, segment: int) -> None:
        self.sampling.start_segment(segment)

    def rollout(self, acting: Acting, length: int) -> Rollout:
        sampler = self.sampling.sampler
        before = (sampler.env_steps, sampler.forward_passes)
        rollout, episodes = self.sampling.rollout(acting, length)
        self.env_steps += sampler.env_steps - before[0]
        self.forward_passes += sampler.forward_passes - before[1]
        self.episodes.extend(episodes)
        self._take_timings()
        return rollout

    def _take_timings(self) -> None:
        """Add the inner sampler's timings since the last call to this sampler's (which
        the learner zeroes per segment)."""
        sampler = self.sampling.sampler
        for name, seconds in sampler.timings.items():
            self.timings[name] = self.timings.get(name, 0.0) + seconds
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)

    def close(self) -> None:
        self.sampling.close()


def learner_sampler(context: LearnerContext, request: SamplerRequest) -> Sampler | ShardedSampler:
    """Where a learner's envs are stepped: the scheduler's sampler when it offers one (Ray
    actors); else in this process, in shards when ``scheduler.envs_per_shard`` is set
    (groups are then the shards), else one :class:`Sampler` in ``algo.env_groups`` groups."""
    if context.samplers is not None:
        sampler = context.samplers(request)
        if sampler is not None:
            return sampler
    if context.envs_per_shard:
        return LocalShards(request, shard_layout(request, context.envs_per_shard))
    return Sampler.for_request(request)


def sampler_report(sampler: Sampler | ShardedSampler, notices: list[str]) -> dict[str, float]:
    """After a segment: a sharded sampler's numbers, as ``sampler_<name>`` stats, and its
    notices moved to the learner's ``notices`` (an unsharded sampler has neither)."""
    if not isinstance(sampler, ShardedSampler):
        return {}
    notices.extend(sampler.notices)
    sampler.notices.clear()
    return {f"sampler_{name}": value for name, value in sampler.stats.items()}
