"""Who plays which agent of each world: the learner's agents and the opponent drawn for the
game in progress (:class:`Seats`), or, with a policy per team or agent, each policy's
player: itself or an entry of its hall of fame (:class:`TeamSeats`); each lane's running
game score, and each game's outcome.

World ``w`` of k agents is lanes ``w k .. w k + k - 1`` (:mod:`neuroplug.envs.multi_agent.
lanes`). A game's seats are set when it starts and kept to its end: the opponent of a world
changes only between games, where the sampler also resets every lane's recurrent state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neuroplug.opponents.halls import draw_against_halls
from neuroplug.opponents.pool import LIVE, DrawTable
from neuroplug.opponents.seating import game_outcome

TEAM_STRIDE = 1 << 32
"""A policy's pool ids are numbered apart from the others': key ``policy * TEAM_STRIDE +
id`` (policy ``q``'s own live lanes: ``q * TEAM_STRIDE + LIVE``)."""


class Seats:
    """The seats of ``num_envs / k`` worlds of ``k`` agents."""

    def __init__(self, agents: tuple[str, ...], num_envs: int, learner_agents: list[int]) -> None:
        self.lanes = len(agents)
        self.worlds = num_envs // self.lanes
        self.learner_agents = learner_agents
        """Fixed lane offsets the learner plays (a team game); empty: one drawn per game."""
        self.opponent = np.zeros(self.worlds, dtype=np.int64)
        """The pool entry playing each world's other agents this game."""
        self.learner_lane = np.zeros(num_envs, dtype=bool)
        """Whether a lane is one of the learner's agents this game."""
        self.score = np.zeros(num_envs)
        """Each lane's game score so far."""

    def seat(self, world: int, opponent: int, rng: np.random.Generator) -> None:
        """Start world ``world``'s next game against ``opponent``."""
        first = world * self.lanes
        mine = self.learner_agents or [int(rng.integers(self.lanes))]
        self.learner_lane[first : first + self.lanes] = False
        self.learner_lane[[first + offset for offset in mine]] = True
        self.opponent[world] = opponent
        self.score[first : first + self.lanes] = 0.0

    def opponent_of(self, world: int) -> int:
        """What world ``world`` plays against this game (as the records book it)."""
        return int(self.opponent[world])

    def policy_ids(self, rows: slice) -> np.ndarray:
        """Per lane of ``rows``, the pool entry acting for it (the learner's lanes, and every
        lane of a game against itself: :data:`LIVE`)."""
        worlds = np.arange(rows.start, rows.stop) // self.lanes
        return np.where(self.learner_lane[rows], LIVE, self.opponent[worlds])

    def learnable(self, rows: slice) -> np.ndarray:
        """Per lane of ``rows``, whether the learner learns from it: its own agents, and every
        agent of a game against itself (all of them on-policy)."""
        return self.is_live(self.policy_ids(rows))

    @staticmethod
    def is_live(ids: np.ndarray) -> np.ndarray:
        """Which of :meth:`policy_ids`' ids are a learner as it is now (learned from)."""
        return ids == LIVE

    def add_rewards(
        self, rows: slice, rewards: np.ndarray, game_over: np.ndarray
    ) -> list[tuple[int, str]]:
        """Add a step's game rewards to ``rows``; returns ``(world, outcome)`` for each world
        whose game ended: the learner's mean score against the opponent agents' (higher:
        a win, equal: a draw)."""
        self.score[rows] += rewards
        ended = []
        first_world = rows.start // self.lanes
        over = game_over.reshape(-1, self.lanes).any(axis=1)
        for world in np.flatnonzero(over) + first_world:
            lanes = slice(world * self.lanes, (world + 1) * self.lanes)
            scores, mine = self.score[lanes], self.learner_lane[lanes]
            # A game every agent of which learns (the policies per team, all live) has no
            # opponent to rate: its outcome is empty.
            outcome = game_outcome(scores[mine], scores[~mine]) if not mine.all() else ""
            ended.append((int(world), outcome))
        return ended


@dataclass(frozen=True)
class TeamDraw:
    """How a world's next game is drawn with a policy per team or agent: a policy chosen
    uniformly, then its game against the others' halls of fame or live
    (:func:`~neuroplug.opponents.halls.draw_against_halls`, with each hall's draw table).
    Picklable, as :class:`~neuroplug.opponents.pool.DrawTable` is."""

    tables: tuple[DrawTable, ...]

    def draw(self, rng: np.random.Generator) -> tuple[int, ...]:
        """Each policy's pool entry for the game (:data:`LIVE` everywhere: a live game)."""
        policy = int(rng.integers(len(self.tables)))
        drawn = draw_against_halls(policy, self.tables, rng)
        return (LIVE,) * len(self.tables) if drawn is None else drawn


class TeamSeats(Seats):
    """The seats of ``num_envs / k`` worlds of ``k`` agents, agent ``a`` on policy
    ``of_agent[a]``'s side: each game seats on each side that policy (live: the learner,
    it learns from those lanes) or an entry of its hall of fame. A game against halls has
    one live side, whose agents' mean score against the others' is its outcome."""

    def __init__(self, agents: tuple[str, ...], num_envs: int, of_agent: tuple[int, ...]):
        super().__init__(agents, num_envs, [])
        self.of_lane = np.tile(np.asarray(of_agent, dtype=np.int64), self.worlds)
        """Each lane's policy."""
        self.of_agent = np.asarray(of_agent, dtype=np.int64)
        self.drawn = np.full((self.worlds, int(self.of_agent.max()) + 1), LIVE, np.int64)
        """Each world's pool entry per policy this game."""
        self.learner_lane[:] = True

    def seat(self, world: int, opponent: tuple[int, ...], rng: np.random.Generator) -> None:
        """Start world ``world``'s next game with each policy's entry ``opponent``."""
        first = world * self.lanes
        self.drawn[world] = opponent
        self.learner_lane[first : first + self.lanes] = self.drawn[world][self.of_agent] == LIVE
        self.score[first : first + self.lanes] = 0.0

    def opponent_of(self, world: int) -> tuple[int, ...]:
        return tuple(int(entry) for entry in self.drawn[world])

    def policy_ids(self, rows: slice) -> np.ndarray:
        """Per lane of ``rows``, the key of its player: ``policy * TEAM_STRIDE + entry``."""
        worlds = np.arange(rows.start, rows.stop) // self.lanes
        policies = self.of_lane[rows]
        return policies * TEAM_STRIDE + self.drawn[worlds, policies]

    @staticmethod
    def is_live(ids: np.ndarray) -> np.ndarray:
        """Which keys are a policy's learner as it is now (learned from)."""
        return ids % TEAM_STRIDE == LIVE
