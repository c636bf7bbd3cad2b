"""The learners and their opponents acting in one batched forward.

Each step, a group's lanes are split by who plays them: a learner (its own agents, and
every agent of a game against itself), one of its frozen snapshots, a scripted bot, or
another member of the population (``selfplay.members``: its live weights, not learned
from). A population's members (``algo=pbt``) each have a league over their own envs; with
a policy per team or agent (:mod:`.team_league`) a member's league (a lone learner's
policies are one member) has as players its policies' learners, each on its own agents,
and every policy's hall of fame. The
network-driven lanes go through **one** forward of the stacked weights ``[learner 1, ...,
learner K, snapshot 1, ...]`` (:func:`~neuroplug.rl.acting.act_in_runs`: each player's
lanes in runs paired with its weights, heterogeneous batching). Only the players with a
game in the group take part, and a player with no lane costs nothing. Bots are called on
their lanes' observations (with draws from the acting generator). A snapshot's lanes
carry their own recurrent states, reset with every lane's at a game's start.

Who plays each lane is the seats' of the :mod:`.seating` of the process that steps it: the
acting is bound to the seatings there (:meth:`SelfPlayActing.begin`), its rollout's steps
watched by them (:meth:`~SelfPlayActing.watch`), and at the end
(:meth:`~SelfPlayActing.finish`) the seatings' records and who learns from each step go
back with the rollout (a :class:`PlayedRollout`), so each learner learns only from the
steps it played: its own agents', and with ``selfplay.members_learn`` those a member played
in another member's league (Sample Factory's policies learn from every agent they play).
Its :meth:`~SelfPlayActing.snapshot` (for a Ray sampler actor) carries the
weights, the players, the bots' names and the draw tables, and binds to the actor's own
seatings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from neuroplug.envs.raw_steps import StepBatch
from neuroplug.opponents.bots import load_bot
from neuroplug.opponents.pool import LIVE
from neuroplug.rl.acting import Acted, Acting, ActorCriticActing, act_in_runs
from neuroplug.rl.actor_critic import env_actions
from neuroplug.rl.self_play.seating import Records, Seating

UNIT_EDGE = 1 - 1e-6
BOT = -1
"""A lane's position when a bot plays it (no network)."""
NOBODY = -1
"""Who learns from a step no learner played (a snapshot's, a bot's)."""


@dataclass
class PlayedRollout:
    """What a rollout's self-play gives back: each league's :class:`~.seating.Records`,
    and ``learners`` ``(T, N)``: the learner (its place among the members) that learns from
    each step, :data:`NOBODY` where none does (a snapshot's, a bot's)."""

    records: list[Records]
    learners: np.ndarray

    @staticmethod
    def joined(parts: list[PlayedRollout]) -> PlayedRollout:
        """The rollouts of several samplers' envs, side by side in that order, as one."""
        records = [Records() for _ in parts[0].records]
        for part in parts:
            for mine, theirs in zip(records, part.records, strict=True):
                mine.extend(theirs)
        return PlayedRollout(records, np.concatenate([part.learners for part in parts], axis=1))


class SelfPlayActing(Acting):
    """The learners' acting (``inner``, an :class:`ActorCriticActing` over them) widened
    to every league's players (``leagues``: :class:`~neuroplug.rl.self_play.leagues.
    Leagues`); see the module docstring."""

    plays_games = True
    """A sampler that steps its envs with it binds it to its seatings (``begin``)."""

    def __init__(self, inner: ActorCriticActing, leagues: Any) -> None:
        super().__init__(inner.members, inner.envs_per_member)
        self.inner = inner
        self.learners = list(inner.members)
        self.learner_count = len(self.learners)
        """The learners' places in the stack (``0 .. learner_count - 1``; a snapshot for a
        Ray actor has their weights, not the learners)."""
        self.leagues = leagues
        self.members_learn = bool(leagues.each[0].config.members_learn)
        """Whether a member learns from the steps it plays in another member's league."""
        self.league_envs = leagues.envs_per_member
        """Each league's envs: league k plays the learner's envs ``k E .. (k + 1) E - 1``."""
        self.specs = [league.spec for league in leagues.each]
        self.tables = leagues.tables()
        """Each league's draw table, from the last refresh."""
        self.bot_names: dict[tuple[int, int], str] = {}
        """Each league's bots by pool id: what they load from where the acting is sent."""
        self._bots: dict[tuple[int, int], Any] = {}
        self.seatings: list[Seating] | None = None
        self.calls: dict[tuple[int, int], list[np.ndarray]] = {}
        self.players: list[tuple[np.ndarray, np.ndarray]] = [
            (np.array([LIVE]), np.array([k])) for k in range(len(self.learners))
        ]
        """Per league, its players' keys (sorted: pool ids, or with a policy per team
        :class:`~.seats.TeamSeats`' keys) and each one's place in the stack (:data:`BOT`
        for a bot), read at each refresh: a step looks its lanes up at once."""

    def refresh(self) -> None:
        """Stack the learners' weights and every league's snapshots (they change only
        between segments; the learners' every rollout), and take the draw tables."""
        holders, self.players = [], []
        for k, league in enumerate(self.leagues.each):
            places = {}
            for key, entry, learner in league.players(k):
                if learner is not None:  # a learner, as it is now
                    places[key] = learner
                elif entry.kind == "snapshot":
                    places[key] = len(self.learners) + len(holders)
                    holders.append(SimpleNamespace(model=entry.model, device=self.device))
                else:  # a bot
                    places[key] = BOT
                    self.bot_names[(k, key)] = entry.bot_target
                    self._bots[(k, key)] = entry.bot
            ids = np.array(sorted(places), np.int64)
            self.players.append((ids, np.array([places[int(i)] for i in ids], np.int64)))
        self.inner.members = [*self.learners, *holders]
        self.inner.refresh()
        self.tables = self.leagues.tables()
        self.calls = {}

    def snapshot(self) -> SelfPlayActing:
        """The weights, players, bots' names and draw tables, without the learners, the
        leagues or any seating: what a Ray sampler actor binds to its own seatings."""
        copy = object.__new__(type(self))
        copy.__dict__.update(vars(self))
        copy.inner = self.inner.snapshot()
        copy.members, copy.learners, copy.leagues = [], [], None
        copy.device = torch.device("cpu")
        copy.seatings, copy._bots, copy.calls = None, {}, {}
        return copy

    # ------------------------------------------------------------------ where it is stepped

    def begin(self, owned: np.ndarray, holder: Any) -> None:
        """A rollout of the learner's envs ``owned`` begins in ``holder``'s process (it
        keeps ``self_play_seatings`` across rollouts, and knows its ``segment``): bound to
        its seatings (built the first time, over the worlds of ``owned``), each given its
        league's draw table."""
        if holder.self_play_seatings is None:
            owned = np.asarray(owned)
            holder.self_play_seatings = [
                Seating(
                    spec, _within(owned, k * self.league_envs, self.league_envs), holder.segment
                )
                for k, spec in enumerate(self.specs)
            ]
        self.seatings = holder.self_play_seatings
        self.calls = {}
        for seating, table in zip(self.seatings, self.tables, strict=True):
            seating.begin_rollout(table)

    def watch(self, rows: slice, batch: StepBatch) -> None:
        """A step's results for the learner's envs ``rows``, each league's part to its
        seating."""
        for k, mine, within in self._overlapping(rows):
            self.seatings[k].after_step(
                mine, batch.rewards[within], batch.game_rewards[within], batch.game_over[within]
            )

    def finish(self, groups: list[slice], steps: int) -> PlayedRollout:
        """The rollout's records and who learns from each step, over ``groups`` (the
        learner's envs this process stepped, in its order)."""
        return PlayedRollout(
            [seating.take_records() for seating in self.seatings],
            self.step_learners(groups, steps),
        )

    # ------------------------------------------------------------------ acting

    def act(self, observations, rows, states, generator):
        positions, learners, bots = self._players(rows)
        self.calls.setdefault((rows.start, rows.stop), []).append(learners)
        if not bots and (positions == positions[0]).all():
            # One player: its plain forward.
            member = torch.tensor([int(positions[0])])
            return self.inner.act_members(observations, member, states, generator)
        count = len(observations)
        networked = np.flatnonzero(positions != BOT)
        parts = []
        if len(networked):
            parts.append(
                (networked, self._forward(observations, networked, positions, states, generator))
            )
        for k, id_, lanes in bots:
            chosen = self._bot(self._bot_of(k, id_), observations, lanes, states, generator)
            parts.append((lanes, chosen))
        return _merge(parts, count, observations.device)

    def _overlapping(self, rows: slice) -> Iterator[tuple[int, slice, slice]]:
        """``(league, its own envs among rows, where they sit in rows)`` for each league
        with envs in ``rows`` (a group of the sampler's)."""
        size = self.league_envs
        for k in range(rows.start // size, min(len(self.specs), -(-rows.stop // size))):
            first = k * size
            start, stop = max(rows.start, first), min(rows.stop, first + size)
            if stop > start:
                yield (
                    k,
                    slice(start - first, stop - first),
                    slice(start - rows.start, stop - rows.start),
                )

    def _players(self, rows: slice) -> tuple[np.ndarray, np.ndarray, list]:
        """Per lane of ``rows``: its player's place in the stack (:data:`BOT` for a bot's),
        the learner that learns from it (:data:`NOBODY`: none), and each bot's lanes
        ``(league, id, lanes)``."""
        positions = np.empty(rows.stop - rows.start, np.int64)
        live = np.empty(len(positions), bool)
        bots = []
        for k, mine, within in self._overlapping(rows):
            ids = self.seatings[k].seats.policy_ids(mine)
            known, places = self.players[k]
            found = np.minimum(np.searchsorted(known, ids), len(known) - 1)
            if (known[found] != ids).any():
                missing = sorted(set(ids.tolist()) - set(known.tolist()))
                raise RuntimeError(f"self-play seated pool entries {missing} it no longer holds")
            positions[within] = places[found]  # no loop over lanes
            live[within] = self.seatings[k].seats.is_live(ids)
            is_bot = positions[within] == BOT
            for id_ in dict.fromkeys(ids[is_bot].tolist()):
                bots.append((k, id_, np.flatnonzero(ids == id_) + within.start))
        # A learner's place in the stack is its place among the members: a league's own
        # learner (live), or another member playing with its live weights.
        learner_plays = (positions >= 0) & (positions < self.learner_count)
        learns = learner_plays & (live | self.members_learn)
        return positions, np.where(learns, positions, NOBODY), bots

    def _bot_of(self, league: int, id_: int):
        """League ``league``'s bot ``id_``, loaded by its name where it was not handed over."""
        key = (league, id_)
        if key not in self._bots:
            self._bots[key] = load_bot(self.bot_names[key], self.inner.env)
        return self._bots[key]

    def step_learners(self, groups: list[slice], steps: int) -> np.ndarray:
        """``(steps, envs of groups)``: the learner that learns from each lane's step
        (:data:`NOBODY`: none), from the rollout's calls (a group is asked once per step, in
        order, then once for the bootstrap values)."""
        sizes = [rows.stop - rows.start for rows in groups]
        learners = np.full((steps, sum(sizes)), NOBODY, dtype=np.int64)
        column = 0
        for rows, size in zip(groups, sizes, strict=True):
            calls = self.calls.get((rows.start, rows.stop), [])
            if len(calls) != steps + 1:
                raise RuntimeError(
                    f"self-play saw {len(calls)} calls for envs {rows.start}-{rows.stop} in a "
                    f"rollout of {steps} steps: the sampler's contract changed"
                )
            learners[:, column : column + size] = np.stack(calls[:steps])
            column += size
        self.calls = {}
        return learners

    # ------------------------------------------------------------------------------

    def _forward(self, observations, lanes, positions, states, generator) -> Acted:
        """The network players' choices on ``lanes``: one forward (:func:`act_in_runs`)."""
        index = torch.as_tensor(lanes, device=observations.device)
        return act_in_runs(
            self.inner,
            observations[index],
            positions[lanes],
            None if states is None else states[index],
            generator,
        )

    def _bot(self, bot, observations, lanes, states, generator) -> Acted:
        """A bot's choices on ``lanes``: no log-probabilities or values (never learned from);
        its draws from a generator seeded by the acting one (the shard's stream)."""
        env = self.inner.env
        seed = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
        chosen = np.asarray(bot(observations[lanes].cpu().numpy(), np.random.default_rng(seed)))
        device = observations.device
        if env.discrete:
            actions = torch.as_tensor(chosen.astype(np.int64), device=device)
            sent = env_actions(env, actions)
        else:
            low, high = env.action_low, env.action_high
            unit = np.clip(2 * (chosen - low) / (high - low) - 1, -UNIT_EDGE, UNIT_EDGE)
            actions = torch.as_tensor(np.arctanh(unit), dtype=torch.float32, device=device)
            sent = chosen.astype(np.float32)
        zeros = torch.zeros(len(lanes), device=device)
        kept = None if states is None else states[torch.as_tensor(lanes, device=device)]
        return Acted(actions, zeros, zeros, sent, kept)


def _within(owned: np.ndarray, first: int, count: int) -> np.ndarray:
    """The envs of ``owned`` among ``first .. first + count - 1``, numbered from ``first``."""
    return owned[(owned >= first) & (owned < first + count)] - first


def _merge(parts: list[tuple[np.ndarray, Acted]], count: int, device) -> Acted:
    """One :class:`Acted` of ``count`` rows from the parts' rows."""
    first = parts[0][1]
    actions = torch.empty(
        (count, *first.actions.shape[1:]), dtype=first.actions.dtype, device=device
    )
    log_probs = torch.empty(count, device=device)
    values = torch.empty(count, device=device)
    sent = np.empty((count, *first.env_actions.shape[1:]), dtype=first.env_actions.dtype)
    states = (
        None if first.states is None else torch.empty((count, first.states.shape[1]), device=device)
    )
    for lanes, acted in parts:
        index = torch.as_tensor(lanes, device=device)
        actions[index] = acted.actions.to(actions.dtype)
        log_probs[index] = acted.log_probs
        values[index] = acted.values
        sent[lanes] = acted.env_actions
        if states is not None:
            states[index] = acted.states
    return Acted(actions, log_probs, values, sent, states)
