"""A league's worlds as the sampler that steps them sees them: who sits where, each game's
score, and what happened, for the driver to book (:mod:`.league`).

A seating lives where its envs are stepped: in the learner's process, or on each Ray
sampler actor for the worlds of its shards (:mod:`neuroplug.rl.shards`). What it decides
is a function of its worlds alone, so it is the same wherever they are stepped:

- a world's draws (its next game's opponent, and its learner's agent in a symmetric game)
  come from the world's own stream for the segment
  (:func:`~neuroplug.runtime.seeds.self_play_world_rng`), with the pool's
  :class:`~neuroplug.opponents.pool.DrawTable` given at the rollout's start (the weights
  the pool's results gave then; with a policy per team, a
  :class:`~neuroplug.rl.self_play.seats.TeamDraw` of every policy's hall of fame);
- each ended game is a record (the rollout's step, the world, the opponent, the outcome),
  and each new seat another, which the driver books after the rollout in the order of
  (step, world): ratings, results and the learner's games come out the same for any
  number of shards and actors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuroplug.opponents.pool import DrawTable
from neuroplug.rl.sampler import Episodes
from neuroplug.rl.self_play.seats import Seats, TeamDraw, TeamSeats
from neuroplug.runtime.seeds import self_play_world_rng


@dataclass(frozen=True)
class SeatingSpec:
    """What a seating is built from (picklable: a Ray sampler actor builds its own)."""

    agents: tuple[str, ...]
    num_envs: int
    learner_agents: tuple[int, ...]
    seed: int

    def new_seats(self) -> Seats:
        """The worlds' seats, before any game."""
        return Seats(self.agents, self.num_envs, list(self.learner_agents))


@dataclass(frozen=True)
class TeamSeatingSpec:
    """What a seating of worlds with a policy per team or agent is built from: agent ``a``
    on policy ``of_agent[a]``'s side."""

    agents: tuple[str, ...]
    num_envs: int
    of_agent: tuple[int, ...]
    seed: int

    def new_seats(self) -> TeamSeats:
        """The worlds' seats, before any game."""
        return TeamSeats(self.agents, self.num_envs, self.of_agent)


@dataclass
class Records:
    """What a seating's worlds did in one rollout: ``results`` ``(step, world, opponent,
    outcome)`` of each game that ended, ``seated`` ``(step, world, opponent)`` of each game
    that began (step -1: seated before the rollout's first step), and the learner's own
    agents' ``games`` (their scores, lengths and envs). An opponent is a pool id, or with
    a policy per team each policy's entry (a tuple)."""

    results: list[tuple[int, int, Any, str]] = field(default_factory=list)
    seated: list[tuple[int, int, Any]] = field(default_factory=list)
    games: list[tuple[int, int, float, int, float]] = field(default_factory=list)
    """``(step, env, score, length, trained)`` of each of the learner's agents whose game
    ended (``trained``: the sum of its rewards, what it was paid)."""

    def extend(self, other: Records) -> None:
        """Add ``other``'s records (another part of the same rollout)."""
        self.results += other.results
        self.seated += other.seated
        self.games += other.games

    def episodes(self) -> Episodes:
        """The learner's games in (step, env) order."""
        games = sorted(self.games)
        return Episodes(
            [game[2] for game in games],
            [game[3] for game in games],
            [game[1] for game in games],
            [game[4] for game in games],
        )


class Seating:
    """One league's seats over ``spec.num_envs`` envs, of which this process steps
    ``owned`` (see the module docstring)."""

    def __init__(
        self, spec: SeatingSpec | TeamSeatingSpec, owned: np.ndarray, segment: int = 0
    ) -> None:
        self.spec = spec
        self.seats = spec.new_seats()
        lanes = self.seats.lanes
        self.worlds = sorted({int(env) // lanes for env in np.asarray(owned)})
        """The worlds whose envs this process steps."""
        self.rngs: dict[int, np.random.Generator] = {}
        self.table: DrawTable | TeamDraw | None = None
        self.records = Records()
        self._unseated = set(self.worlds)
        self._trained = np.zeros(spec.num_envs)
        """Each lane's rewards in its game so far (what the learner is paid)."""
        self._length = np.zeros(spec.num_envs, dtype=np.int64)
        self._after_end = np.zeros(spec.num_envs, dtype=bool)
        """Lanes whose game just ended: their next step is the reset, not a move."""
        self._steps = np.zeros(spec.num_envs, dtype=np.int64)
        """Each lane's steps in this rollout (a group's lanes are stepped together)."""
        self.start_segment(segment)

    def envs_started(self) -> None:
        """Every world starts a new game (seated at the next rollout's start)."""
        self._unseated = set(self.worlds)
        self.seats.score[:] = 0.0
        self._trained[:] = 0.0
        self._length[:] = 0
        self._after_end[:] = False

    def start_segment(self, segment: int) -> None:
        """Each world's draws for ``segment``."""
        self.rngs = {
            world: self_play_world_rng(self.spec.seed, segment, world) for world in self.worlds
        }

    def begin_rollout(self, table: DrawTable | TeamDraw) -> None:
        """A rollout starts, its games drawn with ``table``; worlds whose envs just started
        are seated first."""
        self.table = table
        self.records = Records()
        self._steps[:] = 0
        for world in sorted(self._unseated):
            self._seat(world)
        self._unseated = set()

    def after_step(
        self, rows: slice, rewards: np.ndarray, game_rewards: np.ndarray, game_over: np.ndarray
    ) -> None:
        """A step's results for the lanes ``rows`` (the league's own numbering): the rewards
        and scores added; each finished game recorded, and its world seated anew after its
        reset step. The reset step (actions ignored) is still acted by the ended game's
        players: the value it computes of each lane's last observation is what a game cut
        short (truncated) bootstraps from, and it must be that lane's player's."""
        seats, lanes = self.seats, self.seats.lanes
        step = int(self._steps[rows.start])
        reset = self._after_end[rows].copy()
        for world in np.unique((np.flatnonzero(reset) + rows.start) // lanes):
            self._seat(int(world), step)
        self._trained[rows] += rewards
        self._length[rows] += ~reset
        self._after_end[rows] = False
        self._steps[rows] += 1
        for world, outcome in seats.add_rewards(rows, game_rewards, game_over):
            self.records.results.append((step, world, seats.opponent_of(world), outcome))
            mine = slice(world * lanes, (world + 1) * lanes)
            for lane in np.flatnonzero(seats.learner_lane[mine]) + world * lanes:
                game = (
                    step, int(lane), float(seats.score[lane]), int(self._length[lane]),
                    float(self._trained[lane]),
                )  # fmt: skip
                self.records.games.append(game)
            self._length[mine] = 0
            self._trained[mine] = 0.0
            self._after_end[mine] = True  # seated at its reset step, above

    def take_records(self) -> Records:
        """The rollout's records (and a fresh list for the next)."""
        records, self.records = self.records, Records()
        return records

    def _seat(self, world: int, step: int = -1) -> None:
        rng = self.rngs[world]
        opponent = self.table.draw(rng)
        self.seats.seat(world, opponent, rng)
        self.records.seated.append((step, world, opponent))
