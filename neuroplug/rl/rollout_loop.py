"""The one learner loop: K >= 1 members of one learner class on one sampler.

A lone learner (``algo=ppo``, ``appo``, ``dqn``) is a population of one; ``algo=pbt`` is K
members, each with its own weights, optimizer, settings and random streams, side by side
on K x n envs that live for the whole run. Member k owns envs ``k*n .. k*n+n-1``. Per
segment::

    start the envs if none are running        (a run's start, or a resumed run's)
    seed the action stream and every member's streams from (run seed, segment)
    for each rollout of the segment:
        refresh the acting weights from the members'              (once per rollout)
        sample T steps of all K*n envs; each group step is ONE forward of its members
            (the members' Acting: their weights stacked, heterogeneous batching)
        book the games that ended to the members whose envs played them
        every member learns from its columns k*n .. k*n+n-1 of the rollout: all at once
            where the learner stacks their updates (population_update), else each by
            its own learn_rollout
        the owner's after_rollout()                               (PBT exploits)

A learner that learns while it samples (``appo``) replaces the rollout loop with its own
(:meth:`~neuroplug.rl.base.SegmentLearner.segment_loop`) and uses the same
:meth:`RolloutLoop.sample`.

Resuming: EnvPool cannot save an env in the middle of an episode, so a resumed run builds
its envs anew, seeded from (run seed, the segment it resumes at), and they start new
episodes; the loop says so once. Everything else continues exactly: weights, optimizer,
RNG streams and counters. A resumed run is itself reproducible (the same checkpoint
resumed twice ends in the same state on CPU); it differs from the uninterrupted run from
the resume on, because the games in progress there were lost.

The sampler is the loop's only contact with envs: scaling out (envs on Ray actors)
replaces :class:`~neuroplug.rl.sampler.Sampler` with one that fills the same rollouts
elsewhere (:class:`~neuroplug.api.LearnerSampler`), and nothing here changes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

from neuroplug.api import LearnerContext, LearnerSampler, SamplerRequest, Segment
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.errors import PluginError
from neuroplug.rl.acting import Acting, LaneActing, lane_acting
from neuroplug.rl.guest_steps import (
    guest_shares,
    member_columns,
    member_rollouts,
    stacked_rollout,
)
from neuroplug.rl.sampler import Episodes, Rollout, Sampler
from neuroplug.rl.shards import learner_sampler, sampler_report
from neuroplug.runtime.seeds import segment_episode_seeds

if TYPE_CHECKING:
    from neuroplug.rl.self_play.leagues import Leagues

NEW_EPISODES = "start new episodes"
"""The words of a resumed learner's notice (its envs begin new games)."""

SegmentLoop = Callable[["RolloutLoop"], tuple[dict[str, float], dict[str, float]]]
"""A segment's rollouts, run on the loop: returns (stats, timings)."""


class Member(Protocol):
    """What the loop asks of a member (:class:`~neuroplug.rl.base.SegmentLearner`)."""

    config: Any
    """Its settings: ``num_envs``, ``reward_clip`` and ``episodic_life`` are read."""
    env_steps: int
    """Env steps it has sampled over the run; the loop adds each rollout's."""

    @classmethod
    def population_acting(cls, members: list[Any], envs_per_member: int) -> Acting:
        """How ``members`` act, all at once."""

    @classmethod
    def population_update(cls, members: list[Any], envs_per_member: int) -> Any:
        """Their updates as one computation (``learn(rollout)``), or None."""

    def start_segment(self, segment: int) -> None:
        """Seed its streams for ``segment``."""

    def envs_started(self) -> None:
        """Its envs start new episodes."""

    def rollout_steps(self) -> int:
        """Steps of every env per rollout."""

    def segment_length(self) -> int:
        """Its env steps of the running segment."""

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """Learn from its envs' part of a rollout; returns the update's statistics."""


class RolloutLoopOwner(Protocol):
    """What the loop reports to: the learner the trainer drives (a lone learner itself,
    or a population)."""

    segments: int
    notices: list[str]
    progress: Callable[[dict[str, Any]], None] | None

    def games_finished(self, games: Episodes) -> None:
        """The games that ended in the last rollout (their env says whose they are)."""

    def after_rollout(self) -> None:
        """Called after every member learned from a rollout."""


class RolloutLoop:
    """Samples rollouts of its members' envs and hands each member its part."""

    def __init__(
        self,
        context: LearnerContext,
        members: Sequence[Member],
        env_groups: int,
        device: torch.device,
        resume_keeps: str,
        lane_owners: np.ndarray | None = None,
    ) -> None:
        """``members``: learners of one class, each with ``config.num_envs`` envs;
        ``resume_keeps`` ends the notice of a resumed run (what continues exactly).
        ``lane_owners``: the member of each env, where members own lanes of shared worlds
        (a world's policies per team or agent, :mod:`neuroplug.rl.agent_policies`: worlds
        stay whole in the env pool, so a member's envs are not consecutive; member k's
        ``config.num_envs`` are its lanes); None: member by member."""
        first = members[0]
        config = first.config
        self.context = context
        self.members = list(members)
        self.resume_keeps = resume_keeps
        self.lanes: list[slice | torch.Tensor] = (
            [slice(k * config.num_envs, (k + 1) * config.num_envs) for k in range(len(members))]
            if lane_owners is None
            else [torch.as_tensor(np.flatnonzero(lane_owners == k)) for k in range(len(members))]
        )
        """Each member's envs of the sampler."""
        self.lane_owners = (
            np.repeat(np.arange(len(members)), config.num_envs)
            if lane_owners is None
            else np.asarray(lane_owners, np.int64)
        )
        """The member of each env of the sampler."""
        self.sampler: LearnerSampler = learner_sampler(
            context,
            SamplerRequest(
                context.env,
                config.num_envs * len(self.members) if lane_owners is None else len(lane_owners),
                env_groups,
                context.env_threads,
                device,
                config.reward_clip,
                config.episodic_life,
                # Groups and shards hold whole members, or whole worlds of lanes.
                unit=config.num_envs if lane_owners is None else context.env.lanes_per_env,
                run_seed=context.seed,
                state_size=context.network.state_size,
            ),
        )
        """Every member's envs, member by member: one sampler here, or shards of them
        (here or on Ray actors, each shard acting with its own generator)."""
        learner_class = type(first)
        acting = learner_class.population_acting(self.members, config.num_envs)
        self.acting: Acting = acting if lane_owners is None else lane_acting(acting, lane_owners)
        """How the members act, all at once."""
        equal = len({member.config.num_envs for member in self.members}) == 1
        self.update = (
            learner_class.population_update(self.members, config.num_envs)
            if len(self.members) > 1 and equal
            else None
        )
        """The members' updates as one computation, when their learner offers it (and
        they own as many envs each)."""
        self.member_order = None if lane_owners is None else torch.cat(self.lanes)
        """Lanes of shared worlds: the envs member by member, for a stacked update."""
        self.leagues: Leagues | None = None
        """Self-play's pools, seats and acting (``selfplay=pool``): a league per learner."""
        if context.self_play is not None:
            self.leagues = self._start_leagues(context)
        self.member_stats: list[dict[str, float]] = [{} for _ in self.members]
        """Each member's statistics from its last update."""
        self._owner: RolloutLoopOwner | None = None
        self._games = Episodes()
        self._clock = 0.0
        self._first_step = 0
        self._member_steps = 0

    # ------------------------------------------------------------------ a segment

    def train_segment(self, owner: RolloutLoopOwner, loop: SegmentLoop | None = None) -> Segment:
        """One segment of ``owner``'s (its ``segments`` is the segment's index, from 0): the
        rollouts ``loop`` runs (None: :meth:`synchronous_loop`). The segment's stats are
        the loop's and the sampler's; the owner adds its members'."""
        segment = owner.segments
        sampler = self.sampler
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)
        if not sampler.started:
            self._start_envs(owner, segment)
        sampler.start_segment(segment)
        if self.leagues is not None:
            self.leagues.start_segment(segment)
        for member in self.members:
            member.start_segment(segment)
        before = (sampler.env_steps, sampler.forward_passes)
        self._owner = owner
        self._games = Episodes()
        self._clock = time.perf_counter()
        self._first_step = sampler.env_steps
        # Read once: a member's segment_length() shrinks near the budget as its steps grow.
        self._member_steps = [member.segment_length() for member in self.members]
        try:
            stats, timings = (loop or RolloutLoop.synchronous_loop)(self)
        finally:
            self._owner = None
        games = self._games
        env_steps = sampler.env_steps - before[0]
        tables = {}
        if self.leagues is not None:
            league_stats, tables["tournament"] = self.leagues.end_segment(segment)
            stats = {**stats, **league_stats}
        if games.trained:  # what the learner was paid in its games, beside what they scored
            stats = {**stats, "trained_return_mean": float(np.mean(games.trained))}
        return Segment(
            env_steps=env_steps,
            frames=env_steps * self.context.env.frame_skip,
            forward_passes=sampler.forward_passes - before[1],
            returns=np.asarray(games.returns, dtype=np.float64),
            lengths=np.asarray(games.lengths, dtype=np.int64),
            stats={**stats, **sampler_report(sampler, owner.notices)},
            timings={**sampler.timings, **timings},
            tables=tables,
        )

    def rollouts_per_segment(self) -> int:
        """Whole rollouts of every env that cover a member's steps of this segment
        (auto-reset steps are not counted, so counting up to the target would add one)."""
        first = self.members[0]
        per_rollout = first.config.num_envs * first.rollout_steps()
        return math.ceil(self._member_steps[0] / per_rollout)

    def synchronous_loop(self) -> tuple[dict[str, float], dict[str, float]]:
        """Sample a rollout, every member learns from its part, repeat."""
        steps = self.members[0].rollout_steps()
        learning = 0.0
        for _ in range(self.rollouts_per_segment()):
            rollout = self.sample(steps)
            started = time.perf_counter()
            self.learn(rollout)
            self._owner.after_rollout()
            learning += time.perf_counter() - started
        return {}, {"learn": learning}

    # ------------------------------------------------------------------ the steps

    def sample(self, length: int, acting: Acting | None = None, version: int | None = None):
        """One rollout of ``length`` steps of every env, acted by ``acting`` (default: the
        members' :attr:`acting`), refreshed first. With ``version`` and a sampler that
        samples asynchronously (``scheduler=ray``): the rollouts of the shards that come back
        first, as many envs as the learner has or more, acted with the newest weights those
        shards had. Each member's env steps
        grow by its part; the games that ended go to the owner."""
        acting = self.acting if acting is None else acting
        if self.leagues is not None:
            acting = self.leagues.acting_for(acting)
        acting.refresh()
        sampler = self.sampler
        if version is not None and getattr(sampler, "asynchronous", False):
            rollout = sampler.rollout_as_ready(acting, version, length)
        elif self.leagues is not None and isinstance(sampler, Sampler):
            rollout = self.leagues.sample_here(sampler, acting, length)
        else:
            rollout = sampler.rollout(acting, length)
        checked_for_states(rollout, sampler, self.context.network.state_size)
        if len(self.members) == 1:  # (an asynchronous rollout may hold more envs than it has)
            self.members[0].env_steps += int(rollout.valid.sum())
        else:
            for member, lanes in zip(self.members, self.lanes, strict=True):
                member.env_steps += int(rollout.valid[:, lanes].sum())
        finished = sampler.take_episodes()
        if self.leagues is not None:
            # Every agent's steps counted above; a learner learns from, and reports, its own.
            rollout, finished = self.leagues.book(rollout, self.lane_owners)
        self._games.extend(finished)
        owner = self._owner
        owner.games_finished(finished)
        if owner.progress is not None:
            done = sampler.env_steps - self._first_step
            owner.progress(
                segment_progress(
                    owner.segments + 1,
                    done,
                    sum(self._member_steps),
                    done * self.context.env.frame_skip,
                    time.perf_counter() - self._clock,
                    self._games,
                )
            )
        return rollout

    def learn(self, rollout: Rollout) -> None:
        """Each member learns from its own envs' part of ``rollout`` (and from the envs it
        played in as a guest: :mod:`neuroplug.rl.guest_steps`): all at once when their
        learner stacks their updates, else one by one."""
        if rollout.guests is not None and len(self.members) > 1:
            self._learn_with_guests(rollout)
            return
        if self.update is not None:
            order = self.member_order
            self.member_stats = self.update.learn(
                rollout if order is None else rollout.columns(order.to(rollout.valid.device))
            )
            return
        for k, member in enumerate(self.members):
            part = rollout if len(self.members) == 1 else rollout.columns(self.lanes[k])
            self.member_stats[k] = member.learn_rollout(part)

    def _learn_with_guests(self, rollout: Rollout) -> None:
        """:meth:`learn` where members played in each other's envs: each member's own
        columns, then its guest columns; its ``guest_share`` reported."""
        columns = member_columns(rollout, self.lanes)
        if self.update is not None:
            self.member_stats = self.update.learn(stacked_rollout(rollout, columns))
        else:
            parts = member_rollouts(rollout, columns)
            for k, (member, part) in enumerate(zip(self.members, parts, strict=True)):
                self.member_stats[k] = member.learn_rollout(part)
        for stats, share in zip(self.member_stats, guest_shares(columns), strict=True):
            stats["guest_share"] = share

    def _start_leagues(self, context: LearnerContext) -> Leagues:
        """Self-play for each learner, each over its own envs, or for the policies per team
        sharing every world (a hall of fame each), wherever they are stepped."""
        from neuroplug.rl.self_play.leagues import Leagues

        acting = self.acting.inner if isinstance(self.acting, LaneActing) else self.acting
        Leagues.wrap_checked(acting)  # a learner that cannot play, before anything else
        if self.member_order is not None:  # policies per team: a member's share its worlds
            members = len(self.members) // len(env_policies(context.env))
            leagues = Leagues.of_policies(
                context.self_play, context.env, self.members, self.sampler.num_envs // members
            )
        else:
            leagues = Leagues.of_learners(
                context.self_play,
                context.env,
                [member.context.seed for member in self.members],
                self.members,
                self.members[0].config.num_envs,
            )
        self.acting = leagues.wrap(acting)
        return leagues

    def first_rollout(self, owner: RolloutLoopOwner, length: int) -> Rollout:
        """Start the envs and segment 0's streams and sample one rollout, learning nothing:
        what a test or a benchmark inspects an update on."""
        self._start_envs(owner, 0)
        self.sampler.start_segment(0)
        for member in self.members:
            member.start_segment(0)
        self.acting.refresh()
        return self.sampler.rollout(self.acting, length)

    def _start_envs(self, owner: RolloutLoopOwner, segment: int) -> None:
        """Build the envs, seeded from (run seed, ``segment``); past segment 0 that is a
        resumed run, whose games in progress were lost: say so."""
        count = self.sampler.num_envs
        self.sampler.start(segment_episode_seeds(self.context.seed, segment, count))
        for member in self.members:
            member.envs_started()
        if self.leagues is not None:
            self.leagues.envs_started()
        if segment > 0:
            owner.notices.append(
                f"resumed at segment {segment}: the {count} envs {NEW_EPISODES} "
                "(EnvPool cannot save an env mid-episode; the games in progress at the "
                f"checkpoint are not counted); {self.resume_keeps} continue exactly"
                + (
                    "; the recurrent core's states start at zero with the new episodes"
                    if self.context.network.state_size
                    else ""
                )
            )

    def close(self) -> None:
        """Close the envs."""
        self.sampler.close()


def checked_for_states(rollout: Rollout, sampler: Any, state_size: int) -> Rollout:
    """``rollout``, refused (:class:`PluginError`) when a recurrent policy's rollout comes
    back without the core states it acted from: a scheduler's sampler that ignores
    ``SamplerRequest.state_size`` would otherwise train the core from zeros at every step."""
    if state_size and rollout.states is None:
        raise PluginError(
            f"{type(sampler).__name__} returned a rollout without core states for a "
            f"recurrent policy (state size {state_size}): a learner sampler must keep each "
            "env's state and store it in Rollout.states and Rollout.starts"
        )
    return rollout


def segment_progress(
    segment: int,
    env_steps: int,
    segment_steps: int,
    frames: int,
    seconds: float,
    games: Episodes,
) -> dict[str, Any]:
    """Where running segment ``segment`` (counted from 1) stands, for the trainer's
    progress lines: its steps and frames so far, their rate, and its games (the last ten's
    mean true score)."""
    recent = games.returns[-10:]
    return {
        "phase": "segment",
        "segment": segment,
        "env_steps": env_steps,
        "segment_steps": segment_steps,
        "frames": frames,
        "frames_per_second": frames / max(seconds, 1e-9),
        "episodes_done": len(games.returns),
        "recent_return": float(np.mean(recent)) if recent else float("nan"),
    }
