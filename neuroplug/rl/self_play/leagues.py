"""The learners' leagues as one, for the rollout loop: a lone learner's league, or one per
member of a population (``algo=pbt`` with ``selfplay=pool``), each over its member's own
envs (member ``k`` plays envs ``k E .. (k + 1) E - 1``), with its own pool of that
member's snapshots and bots, seats, draws and ratings; or, for a policy per team or agent
(``env.policy_mapping``), a league per member over its worlds with a hall of fame per
policy (:mod:`.team_league`): a lone learner's policies are one member.

The members act together (:class:`~neuroplug.rl.self_play.acting.SelfPlayActing`: every
member's live weights and every league's snapshots in one forward), and each learns from
the steps it played. Where the envs are stepped, each league's worlds are seated
(:mod:`.seating`): here, for an unsharded sampler, or by the sampler of each shard (here or
on Ray actors: :mod:`neuroplug.rl.shards`), whose records come back with the rollout and
are booked here. With ``selfplay.members`` each member's pool also holds the other
members, who play its games with their live weights (in the same forward) and learn from
the agents they played there (``selfplay.members_learn``: the rollout's
:attr:`~neuroplug.rl.sampler.Rollout.guests`, :mod:`neuroplug.rl.guest_steps`); otherwise
nothing passes between members but what population-based training passes (a member that
copies another's weights keeps its own league: its past selves and its results).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.rl.acting import Acting, ActorCriticActing, LaneActing
from neuroplug.rl.sampler import Episodes, Rollout, Sampler
from neuroplug.rl.self_play.acting import SelfPlayActing
from neuroplug.rl.self_play.league import League
from neuroplug.rl.self_play.seating import Seating
from neuroplug.rl.self_play.team_league import TeamLeague


class Leagues:
    """The learners' leagues, league ``k`` over envs ``k E .. (k + 1) E - 1`` (``each``,
    E ``envs_per_member``; see the module docstring)."""

    def __init__(self, each: Sequence[League | TeamLeague], envs_per_member: int) -> None:
        self.each = list(each)
        """League ``k``."""
        self.firsts = [k * envs_per_member for k in range(len(self.each))]
        """League ``k``'s first env."""
        self.envs_per_member = envs_per_member
        self._wrapped: dict[int, SelfPlayActing] = {}
        self.self_play_seatings: list[Seating] | None = None
        """The leagues' seatings where an unsharded sampler here steps every env (a
        sharded sampler keeps its own)."""
        self.segment = 0

    @classmethod
    def of_learners(
        cls,
        config: SelfPlayConfig,
        env: EnvSpec,
        seeds: Sequence[int],
        learners: Sequence[Any],
        envs_per_member: int,
    ) -> Leagues:
        """A league per learner (a lone learner, or a population's members), each over its
        own ``envs_per_member`` envs, with the other members in its pool where
        ``selfplay.members`` says so."""
        count = len(learners)
        return cls(
            [
                League(
                    config, env, seed, learner, envs_per_member,
                    [j for j in range(count) if j != k] if config.members else [], count,
                )
                for k, (seed, learner) in enumerate(zip(seeds, learners, strict=True))
            ],
            envs_per_member,
        )  # fmt: skip

    @classmethod
    def of_policies(
        cls,
        config: SelfPlayConfig,
        env: EnvSpec,
        learners: Sequence[Any],
        envs_per_member: int,
    ) -> Leagues:
        """A league per member of the policies per team or agent ``learners`` (member m's
        policies are ``learners[m K .. (m + 1) K - 1]``, its worlds its ``envs_per_member``
        envs; a lone learner's policies are one member), a hall of fame each
        (:mod:`.team_league`), each drawing from its first learner's seed."""
        count = len(env_policies(env))
        return cls(
            [
                TeamLeague(
                    config, env, learners[first].context.seed,
                    learners[first : first + count], envs_per_member, first,
                    len(learners) // count,
                )
                for first in range(0, len(learners), count)
            ],
            envs_per_member,
        )  # fmt: skip

    # ------------------------------------------------------------------ acting

    def wrap(self, acting: Acting) -> SelfPlayActing:
        """The learners' acting widened to their opponents."""
        self._wrapped = {}
        return self.acting_for(acting)

    @staticmethod
    def wrap_checked(acting: Acting) -> ActorCriticActing:
        """``acting``, refused (naming the learners that play) unless an actor-critic's
        (``dqn``, ``sac``, ``td3`` act otherwise)."""
        if not isinstance(acting, ActorCriticActing):
            raise ConfigError(
                "selfplay",
                f"pool trains an actor-critic learner against its opponents, and this "
                f"learner acts through {type(acting).__name__}",
                "algo=ppo or algo=appo with selfplay=pool",
            )
        return acting

    def acting_for(self, acting: Acting) -> SelfPlayActing:
        """``acting`` widened to the opponents: a learner that samples with an acting copy of
        its model (``appo``) plays its games through that copy."""
        if isinstance(acting, SelfPlayActing):
            return acting
        if isinstance(acting, LaneActing):  # a policy per team: the seats say who plays
            acting = acting.inner
        if id(acting) not in self._wrapped:
            self._wrapped[id(acting)] = SelfPlayActing(self.wrap_checked(acting), self)
        return self._wrapped[id(acting)]

    # ------------------------------------------------------------------ the loop's calls

    def envs_started(self) -> None:
        """Every world starts a new game (seated at the next rollout's start)."""
        for seating in self.self_play_seatings or ():
            seating.envs_started()

    def start_segment(self, segment: int) -> None:
        """Each league's counts, and the seatings' draws, for the segment."""
        self.segment = segment
        for league in self.each:
            league.start_segment()
        for seating in self.self_play_seatings or ():
            seating.start_segment(segment)

    def tables(self) -> list:
        """Each league's draw table for the next rollout."""
        return [league.draw_table() for league in self.each]

    def sample_here(self, sampler: Sampler, acting: SelfPlayActing, length: int) -> Rollout:
        """A rollout of ``sampler`` (unsharded, in this process: every env), its worlds
        seated here, the seatings' records and whom each step may teach attached."""
        acting.begin(np.arange(sampler.num_envs), self)
        sampler.step_watcher = acting.watch
        try:
            rollout = sampler.rollout(acting, length)
        finally:
            sampler.step_watcher = None
        rollout.self_play = acting.finish([group.rows for group in sampler.groups], length)
        return rollout

    def book(self, rollout: Rollout, owners: np.ndarray) -> tuple[Rollout, Episodes]:
        """The rollout's self-play records booked in each league, and the rollout with
        only the steps the env's owner (``owners``: the member of each env) played valid, a
        member's steps in another's envs its :attr:`~neuroplug.rl.sampler.Rollout.guests`;
        the learners' games that ended, each numbered by the learner's env that played it."""
        played = rollout.self_play
        for league, records in zip(self.each, played.records, strict=True):
            league.book(records)
        games = Episodes()
        for first, league in zip(self.firsts, self.each, strict=True):
            mine = league.take_games()
            games.returns.extend(mine.returns)
            games.lengths.extend(mine.lengths)
            games.envs.extend(first + env for env in mine.envs)
            games.trained.extend(mine.trained)
        device = rollout.valid.device
        learners = torch.from_numpy(played.learners).to(device)
        if len(owners) != learners.shape[1]:  # a lone learner's asynchronous rollout
            owners = np.zeros(learners.shape[1], np.int64)  # may hold more envs than it has
        own = learners == torch.from_numpy(np.asarray(owners, np.int64)).to(device)
        guests = torch.where((learners >= 0) & ~own & rollout.valid, learners, -1)
        return dataclasses.replace(
            rollout,
            valid=rollout.valid & own,
            self_play=None,
            guests=guests if bool((guests >= 0).any()) else None,
        ), games

    def end_segment(self, segment: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
        """The segment's ratings and win rates and the tournament table's rows (a
        population's each named by member: ``member<k>/selfplay/...``, a ``member``
        column); then each league's snapshot, when due."""
        if len(self.each) == 1:
            return self.each[0].end_segment(segment)
        stats, rows = {}, []
        for k, league in enumerate(self.each):
            mine, table = league.end_segment(segment)
            stats.update({f"member{k}/{name}": value for name, value in mine.items()})
            rows += [{"member": k, **row} for row in table]
        return stats, rows

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The lone learner's pool, or every member's (``leagues``)."""
        if len(self.each) == 1:
            return self.each[0].state_dict()
        return {"leagues": [league.state_dict() for league in self.each]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s pools; the worlds start new games."""
        states = state["leagues"] if len(self.each) > 1 else [state]
        for league, saved in zip(self.each, states, strict=True):
            league.load_state_dict(saved)
