"""The learners' leagues as one, for the rollout loop: a lone learner's league, or one per
member of a population (``algo=pbt`` with ``selfplay=pool``), each over its member's own
envs (member ``k`` plays envs ``k E .. (k + 1) E - 1``), with its own pool of that
member's snapshots and bots, seats, draws and ratings.

The members act together (:class:`~neuroplug.rl.self_play.acting.SelfPlayActing`: every
member's live weights and every league's snapshots in one forward), and each learns from
its own agents' steps. With ``selfplay.members`` each member's pool also holds the other
members, who play its games with their live weights (in the same forward) but learn
nothing from them; otherwise nothing passes between members but what population-based
training passes (a member that copies another's weights keeps its own league: its past
selves and its results).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import torch

from neuroplug.config.schema import SelfPlayConfig
from neuroplug.envs.raw_steps import StepBatch
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.rl.acting import Acting, ActorCriticActing
from neuroplug.rl.sampler import Episodes, Rollout
from neuroplug.rl.self_play.acting import SelfPlayActing
from neuroplug.rl.self_play.league import League


class Leagues:
    """One league per learner, each over ``envs_per_member`` envs (see the module
    docstring)."""

    def __init__(
        self,
        config: SelfPlayConfig,
        env: EnvSpec,
        seeds: Sequence[int],
        learners: Sequence[Any],
        envs_per_member: int,
    ) -> None:
        count = len(learners)
        self.each = [
            League(
                config, env, seed, learner, envs_per_member,
                [j for j in range(count) if j != k] if config.members else [],
            )
            for k, (seed, learner) in enumerate(zip(seeds, learners, strict=True))
        ]  # fmt: skip
        """Member ``k``'s league."""
        self.firsts = [k * envs_per_member for k in range(len(self.each))]
        """Member ``k``'s first env."""
        self.envs_per_member = envs_per_member
        self._wrapped: dict[int, SelfPlayActing] = {}

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
        if id(acting) not in self._wrapped:
            self._wrapped[id(acting)] = SelfPlayActing(self.wrap_checked(acting), self)
        return self._wrapped[id(acting)]

    def overlapping(self, rows: slice) -> Iterator[tuple[int, League, slice, slice]]:
        """``(member, its league, its own envs among rows, where they sit in rows)`` for each
        member with envs in ``rows`` (a group of the sampler's)."""
        size = self.envs_per_member
        for k in range(rows.start // size, min(len(self.each), -(-rows.stop // size))):
            first = self.firsts[k]
            start, stop = max(rows.start, first), min(rows.stop, first + size)
            if stop > start:
                within = slice(start - rows.start, stop - rows.start)
                yield k, self.each[k], slice(start - first, stop - first), within

    # ------------------------------------------------------------------ the loop's calls

    def envs_started(self) -> None:
        """Every world starts a new game (seated at the segment's start)."""
        for league in self.each:
            league.envs_started()

    def start_segment(self, segment: int) -> None:
        """Each league's draws for the segment."""
        for league in self.each:
            league.start_segment(segment)

    def after_step(self, rows: slice, batch: StepBatch) -> None:
        """A step's results for the envs ``rows``, each member's part to its league."""
        for _, league, mine, within in self.overlapping(rows):
            part = SimpleNamespace(
                game_rewards=batch.game_rewards[within], game_over=batch.game_over[within]
            )
            league.after_step(mine, part)

    def take_games(self) -> Episodes:
        """Every learner's games that ended since the last call (its agents' scores), each
        numbered by the sampler's env that played it."""
        games = Episodes()
        for first, league in zip(self.firsts, self.each, strict=True):
            mine = league.take_games()
            games.returns.extend(mine.returns)
            games.lengths.extend(mine.lengths)
            games.envs.extend(first + env for env in mine.envs)
        return games

    def keep_learners(
        self, rollout: Rollout, groups: list[slice], acting: SelfPlayActing
    ) -> Rollout:
        """``rollout`` (played by ``acting``) with the steps of agents no learner played
        marked not valid."""
        mask = acting.learnable_mask(groups, len(rollout.valid))
        valid = rollout.valid & torch.from_numpy(mask).to(rollout.valid.device)
        return dataclasses.replace(rollout, valid=valid)

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
