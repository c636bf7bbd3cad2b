"""A population of learners sharing one sampler and one batched forward.

K members of one learner class (PPO, APPO, DQN or a third party's), each with its own
weights, optimizer, settings and random streams, train side by side on K x n envs that live
for the whole run in one set of EnvPools. Member k owns envs ``k*n .. k*n+n-1``. Per
rollout::

    refresh the acting stacks from the members' weights        (once per rollout)
    sample T steps of all K*n envs; each group step is ONE forward of all its members
        (PopulationActing: the members' weights stacked, heterogeneous batching)
    every member learns from its columns k*n..k*n+n-1 of the rollout: all at once where
        the learner stacks their updates (population_update: PPO on an MLP), else each
        by its own learn_rollout
    after_rollout()                                             (a subclass's hook: PBT)

Each member learns from its own rollout as it would alone (its learning-rate schedule and
exploration follow its own env steps; its budget is the run's divided by K; a stacked
update is the members' own arithmetic, see ``neuroplug_learners.ppo_population``).
What it does not own: its envs' seeds and its action draws, which come from the
population's streams (reproducible from the run seed, see
:mod:`neuroplug.rl.population_acting`).

Games are booked to the member that played them; a member's *objective* is the mean true
score (unclipped, whole games) of its last ``objective_games`` games. The deployed policy is
the member with the best objective.

Resuming restores every member's state (weights, optimizer, counters), settings and recent
scores exactly; the envs start new episodes, as a single learner's do
(:mod:`neuroplug.rl.base`).

The sampler is the population's only contact with envs: scaling out (members or their envs
on Ray actors) replaces :class:`~neuroplug.rl.sampler.Sampler` with one that fills
the same rollouts elsewhere, and nothing here changes.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext, SamplerRequest, Segment
from neuroplug.devices import on_cpu, resolve_device
from neuroplug.errors import require
from neuroplug.rl.base import (
    NEW_EPISODES,
    SegmentLearner,
    checked_for_states,
    segment_progress,
)
from neuroplug.rl.sampler import Episodes, Rollout
from neuroplug.rl.shards import ShardedSampler, learner_sampler, sampler_report
from neuroplug.seeds import (
    init_generator,
    population_member_seed,
    segment_episode_seeds,
    segment_generator_seed,
)


def member_context(context: LearnerContext, member: int, members: int) -> LearnerContext:
    """Member ``member``'s context: its own seed and initial network, and its share of the
    run's budget."""
    seed = population_member_seed(context.seed, member)
    budget = context.max_env_steps
    return dataclasses.replace(
        context,
        seed=seed,
        initial_params=context.network.initial_params(init_generator(seed)).float(),
        max_env_steps=None if budget is None else max(1, budget // members),
        # A member never steps envs itself: the population samples for all (its sampler
        # is the scheduler's), so the member's own stays an unstarted local one.
        samplers=None,
        envs_per_shard=0,
    )


class LearnerPopulation(Learner):
    """K learners of one class on one sampler; a subclass decides what happens between
    rollouts (:meth:`after_rollout`)."""

    trains_recurrent_cores = True
    """Where its members' learner does (checked when the population is built): each
    member then runs its own core on its envs' states, in the one batched forward."""

    def __init__(
        self,
        config: LearnerConfig,
        context: LearnerContext,
        learner_class: type[SegmentLearner],
        member_configs: Sequence[LearnerConfig],
        objective_games: int = 10,
    ) -> None:
        super().__init__(config, context)
        self.learner_class = learner_class
        require(
            learner_class.trains_recurrent_cores or not context.network.state_size,
            "net.core",
            f"the members' learner {learner_class.__name__} trains feed-forward networks only",
            "net.core=none, or members that train cores (ppo, appo)",
        )
        count = len(member_configs)
        # Each member its own copy: its settings change alone (population-based training).
        self.members: list[SegmentLearner] = [
            learner_class(dataclasses.replace(member_config), member_context(context, k, count))
            for k, member_config in enumerate(member_configs)
        ]
        first = member_configs[0]
        self.envs_per_member = first.num_envs
        self.device = resolve_device(config.device, "algo.device")
        self.sampler = learner_sampler(
            context,
            SamplerRequest(
                context.env,
                first.num_envs * count,
                config.env_groups,
                context.num_threads,
                self.device,
                first.reward_clip,
                first.episodic_life,
                unit=first.num_envs,
                run_seed=context.seed,
                state_size=context.network.state_size,
            ),
        )
        """Every member's envs, member by member: one sampler here, or shards of them
        (here or on Ray actors, each shard acting with its own generator)."""
        self.acting = learner_class.population_acting(self.members, first.num_envs)
        self.update = learner_class.population_update(self.members, first.num_envs)
        """The members' updates as one computation, when their learner offers it."""
        self.generator = torch.Generator(self.device)
        """The population's acting stream (re-seeded per segment)."""
        self.recent: list[deque[float]] = [deque(maxlen=objective_games) for _ in range(count)]
        """Each member's last games' true scores: its objective."""
        self.env_steps = 0
        self.progress: Callable[[dict[str, Any]], None] | None = None
        self.member_stats: list[dict[str, float]] = [{} for _ in range(count)]
        """Each member's statistics from its last update."""

    # ------------------------------------------------------------------ the run

    def member_envs(self, member: int) -> slice:
        """The sampler's envs that ``member`` owns."""
        n = self.envs_per_member
        return slice(member * n, (member + 1) * n)

    def objectives(self) -> np.ndarray:
        """``(K,)``: each member's mean true score over its recent games (NaN: none yet)."""
        return np.array([np.mean(games) if games else math.nan for games in self.recent])

    def best_member(self) -> int:
        """The member with the best objective (the first, when none has finished a game)."""
        objectives = self.objectives()
        return int(np.argmax(np.where(np.isnan(objectives), -np.inf, objectives)))

    def train_segment(self) -> Segment:
        segment = self.generation
        sampler = self.sampler
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)
        if not sampler.started:
            self._start_envs(segment)
        self.generator.manual_seed(segment_generator_seed(self.context.seed, segment))
        if isinstance(sampler, ShardedSampler):
            sampler.start_segment(segment)
        for member in self.members:
            member.start_segment(segment)
        first = self.members[0]
        steps = first.rollout_steps()
        per_member = first.segment_length()
        rollouts = math.ceil(per_member / (self.envs_per_member * steps))
        before = (sampler.env_steps, sampler.forward_passes)
        games = Episodes()
        clock = time.perf_counter()
        learning = 0.0
        for _ in range(rollouts):
            self.acting.refresh()
            if isinstance(sampler, ShardedSampler):
                rollout = sampler.rollout(self.acting, steps)
            else:
                rollout = sampler.rollout(self._act, steps)
            checked_for_states(rollout, sampler, self.context.network.state_size)
            finished = sampler.take_episodes()
            self._book(finished)
            games.extend(finished)
            started = time.perf_counter()
            self._learn(rollout)
            self.after_rollout()
            learning += time.perf_counter() - started
            self._report(sampler.env_steps - before[0], per_member, games, clock)
        env_steps = sampler.env_steps - before[0]
        self.env_steps += env_steps
        self.generation += 1
        for member in self.members:
            member.generation = self.generation
        stats = {**self.segment_stats(), **sampler_report(sampler, self.notices)}
        return Segment(
            env_steps=env_steps,
            frames=env_steps * self.context.env.frame_skip,
            forward_passes=sampler.forward_passes - before[1],
            returns=np.asarray(games.returns, dtype=np.float64),
            lengths=np.asarray(games.lengths, dtype=np.int64),
            stats=stats,
            timings={**sampler.timings, "learn": learning},
            tables=self.segment_tables(),
        )

    def _act(self, observations: torch.Tensor, rows: slice, states: torch.Tensor | None = None):
        return self.acting.act(observations, rows, self.generator, states)

    def _book(self, games: Episodes) -> None:
        """Each finished game's true score goes to the member whose env played it."""
        for score, env in zip(games.returns, games.envs, strict=True):
            self.recent[env // self.envs_per_member].append(score)

    def _learn(self, rollout: Rollout) -> None:
        """Each member learns from its own envs' part of the rollout: all at once when their
        learner stacks their updates, else one by one."""
        steps = rollout.valid.reshape(len(rollout.valid), len(self.members), -1).sum((0, 2))
        for member, taken in zip(self.members, steps.tolist(), strict=True):
            member.env_steps += int(taken)
        if self.update is not None:
            self.member_stats = self.update.learn(rollout)
            return
        for k, member in enumerate(self.members):
            self.member_stats[k] = member.learn_rollout(rollout.columns(self.member_envs(k)))

    def _start_envs(self, segment: int) -> None:
        seeds = segment_episode_seeds(self.context.seed, segment, self.sampler.num_envs)
        self.sampler.start(seeds)
        for member in self.members:
            member.envs_started()
        if segment > 0:
            self.notices.append(
                f"resumed at segment {segment}: the {self.sampler.num_envs} envs "
                f"{NEW_EPISODES} (EnvPool cannot save an env mid-episode); every member's "
                "weights, optimizer, settings, RNG streams and recent scores continue exactly"
                + (
                    "; the recurrent cores' states start at zero with the new episodes"
                    if self.context.network.state_size
                    else ""
                )
            )

    def _report(self, steps: int, per_member: int, games: Episodes, clock: float) -> None:
        if self.progress is not None:
            self.progress(
                segment_progress(
                    self.generation + 1,
                    steps,
                    per_member * len(self.members),
                    steps * self.context.env.frame_skip,
                    time.perf_counter() - clock,
                    games,
                )
            )

    # ------------------------------------------------------------------ hooks

    def after_rollout(self) -> None:  # noqa: B027 - optional hook
        """Called after every member learned from a rollout (PBT exploits and explores)."""

    def segment_stats(self) -> dict[str, float]:
        """The segment's statistics: the best member, each member's objective, and the
        members' mean of every statistic their updates report."""
        objectives = self.objectives()
        stats: dict[str, float] = {"best_member": float(self.best_member())}
        for k, objective in enumerate(objectives):
            stats[f"member{k}/objective"] = float(objective)
        keys = sorted({key for member in self.member_stats for key in member})
        for key in keys:
            values = [member[key] for member in self.member_stats if key in member]
            finite = [value for value in values if not math.isnan(value)]
            stats[key] = float(np.mean(finite)) if finite else math.nan
        return stats

    def segment_tables(self) -> dict[str, list[dict[str, Any]]]:
        """Rows of the run's own tables written this segment (none by default)."""
        return {}

    # ------------------------------------------------------------------ deploy and state

    def policy_params(self) -> torch.Tensor:
        """The best member's policy."""
        return self.members[self.best_member()].policy_params()

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "env_steps": self.env_steps,
            "members": [member.state_dict() for member in self.members],
            "recent": [list(games) for games in self.recent],
            "population": on_cpu(self._state()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state["members"]) != len(self.members):
            raise ValueError(
                f"this checkpoint holds {len(state['members'])} members where this run has "
                f"{len(self.members)}: resume it with algo.members={len(state['members'])}"
            )
        self.generation = int(state["generation"])
        self.env_steps = int(state["env_steps"])
        for member, member_state in zip(self.members, state["members"], strict=True):
            member.load_state_dict(member_state)  # its counters too
            self.notices.extend(n for n in member.notices if n not in self.notices)
            member.notices.clear()
        for games, saved in zip(self.recent, state["recent"], strict=True):
            games.clear()
            games.extend(float(score) for score in saved)
        self._load_state(state["population"])

    def _state(self) -> dict[str, Any]:
        """A subclass's own state."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`_state`."""

    def describe(self) -> str:
        return self.members[0].describe()  # the members share one config's precision

    def close(self) -> None:
        self.sampler.close()
        for member in self.members:
            member.close()
