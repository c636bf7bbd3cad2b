"""A population of learners (what ``algo=pbt`` builds on): K members of one learner class
run by the one learner loop (:mod:`neuroplug.rl.rollout_loop`), plus what only a population has:
each member's objective, the best member, and a hook between rollouts.

Each member learns from its own rollout as it would alone (its learning-rate schedule and
exploration follow its own env steps; its budget is the run's divided by K; a stacked
update is the members' own arithmetic, see ``neuroplug_learners.ppo_stacked``).
What it does not own: its envs' seeds and its action draws, which come from the
population's streams (reproducible from the run seed, see :mod:`neuroplug.rl.acting`).

Games are booked to the member that played them; a member's *objective* is the mean true
score (unclipped, whole games) of its last ``objective_games`` games. The deployed policy is
the member with the best objective.

Resuming restores every member's state (weights, optimizer, counters), settings and recent
scores exactly; the envs start new episodes, as a lone learner's do.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext, Segment
from neuroplug.errors import require
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.rollout_loop import RolloutLoop
from neuroplug.rl.sampler import Episodes
from neuroplug.runtime.devices import on_cpu, resolve_device
from neuroplug.runtime.seeds import init_generator, population_member_seed


def member_context(
    context: LearnerContext, member: int, members: int, share: float | None = None
) -> LearnerContext:
    """Member ``member``'s context: its own seed and initial network, and its share of the
    run's budget (``share``; None: a ``members``-th)."""
    seed = population_member_seed(context.seed, member)
    budget = context.max_env_steps
    if budget is not None:
        budget = max(1, budget // members if share is None else round(budget * share))
    return dataclasses.replace(
        context,
        seed=seed,
        initial_params=context.network.initial_params(init_generator(seed)).float(),
        max_env_steps=budget,
        member=member,
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
        lane_owners: np.ndarray | None = None,
    ) -> None:
        """``lane_owners``: the member of each env where members own lanes of shared worlds
        (:class:`~neuroplug.rl.rollout_loop.RolloutLoop`'s; each member's budget is then its
        lanes' share); None: K members of equal envs, each a K-th of the budget."""
        super().__init__(config, context)
        self.learner_class = learner_class
        require(
            learner_class.trains_recurrent_cores or not context.network.state_size,
            "net.core",
            f"the members' learner {learner_class.__name__} trains feed-forward networks only",
            "net.core=none, or members that train cores (ppo, appo)",
        )
        count = len(member_configs)
        total = sum(member_config.num_envs for member_config in member_configs)
        # Each member its own copy: its settings change alone (population-based training).
        self.members: list[SegmentLearner] = [
            learner_class(
                dataclasses.replace(member_config),
                member_context(
                    context,
                    k,
                    count,
                    None if lane_owners is None else member_config.num_envs / total,
                ),
            )
            for k, member_config in enumerate(member_configs)
        ]
        self.envs_per_member = member_configs[0].num_envs
        self.device = resolve_device(config.device, "algo.device")
        self.rollout_loop = RolloutLoop(
            context,
            self.members,
            config.env_groups,
            self.device,
            resume_keeps=(
                "every member's weights, optimizer, settings, RNG streams and recent scores"
            ),
            lane_owners=lane_owners,
        )
        """The one learner loop, over every member."""
        self.sampler = self.rollout_loop.sampler
        """Every member's envs, member by member."""
        self.recent: list[deque[float]] = [deque(maxlen=objective_games) for _ in range(count)]
        """Each member's last games' true scores: its objective."""
        self.env_steps = 0
        self.progress: Callable[[dict[str, Any]], None] | None = None

    # ------------------------------------------------------------------ the run

    def member_envs(self, member: int) -> slice | torch.Tensor:
        """The sampler's envs that ``member`` owns."""
        return self.rollout_loop.lanes[member]

    def objectives(self) -> np.ndarray:
        """``(K,)``: each member's mean true score over its recent games (NaN: none yet)."""
        return np.array([np.mean(games) if games else math.nan for games in self.recent])

    def best_member(self) -> int:
        """The member with the best objective (the first, when none has finished a game)."""
        objectives = self.objectives()
        return int(np.argmax(np.where(np.isnan(objectives), -np.inf, objectives)))

    @property
    def member_stats(self) -> list[dict[str, float]]:
        """Each member's statistics from its last update."""
        return self.rollout_loop.member_stats

    def train_segment(self) -> Segment:
        segment = self.rollout_loop.train_segment(self)
        self.env_steps += segment.env_steps
        self.segments += 1
        for member in self.members:
            member.segments = self.segments
        segment.stats = {**self.segment_stats(), **segment.stats}
        segment.tables = {**segment.tables, **self.segment_tables()}  # self-play's table too
        return segment

    def games_finished(self, games: Episodes) -> None:
        """Each finished game's true score goes to the member whose env played it."""
        for score, env in zip(games.returns, games.envs, strict=True):
            self.recent[self.rollout_loop.lane_owners[env]].append(score)

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
            "segment": self.segments,
            "env_steps": self.env_steps,
            "members": [member.state_dict() for member in self.members],
            "recent": [list(games) for games in self.recent],
            "population": on_cpu(self._state()),
            **self._leagues_state(),
        }

    def _leagues_state(self) -> dict[str, Any]:
        """Self-play's pools (``self_play``: every member's), when the members play one."""
        leagues = self.rollout_loop.leagues
        return {} if leagues is None else {"self_play": leagues.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if len(state["members"]) != len(self.members):
            raise ValueError(
                f"this checkpoint holds {len(state['members'])} members where this run has "
                f"{len(self.members)}: resume it with algo.members={len(state['members'])}"
            )
        self.segments = int(state["segment"])
        self.env_steps = int(state["env_steps"])
        for member, member_state in zip(self.members, state["members"], strict=True):
            member.load_state_dict(member_state)  # its counters too
            self.notices.extend(n for n in member.notices if n not in self.notices)
            member.notices.clear()
        for games, saved in zip(self.recent, state["recent"], strict=True):
            games.clear()
            games.extend(float(score) for score in saved)
        self._load_state(state["population"])
        if self.rollout_loop.leagues is not None:
            self.rollout_loop.leagues.load_state_dict(state["self_play"])

    def _state(self) -> dict[str, Any]:
        """A subclass's own state."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`_state`."""

    def describe(self) -> str:
        return self.members[0].describe()  # the members share one config's precision

    def close(self) -> None:
        self.rollout_loop.close()
