"""Who plays which agent of each world: the learner's agents and the opponent drawn for the
game in progress, each lane's running game score, and each game's outcome.

World ``w`` of k agents is lanes ``w k .. w k + k - 1`` (:mod:`neuroplug.envs.multi_agent.
lanes`). A game's seats are set when it starts and kept to its end: the opponent of a world
changes only between games, where the sampler also resets every lane's recurrent state.
"""

from __future__ import annotations

import numpy as np

from neuroplug.opponents.pool import LIVE
from neuroplug.opponents.seating import game_outcome


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

    def policy_ids(self, rows: slice) -> np.ndarray:
        """Per lane of ``rows``, the pool entry acting for it (the learner's lanes, and every
        lane of a game against itself: :data:`LIVE`)."""
        worlds = np.arange(rows.start, rows.stop) // self.lanes
        return np.where(self.learner_lane[rows], LIVE, self.opponent[worlds])

    def learnable(self, rows: slice) -> np.ndarray:
        """Per lane of ``rows``, whether the learner learns from it: its own agents, and every
        agent of a game against itself (all of them on-policy)."""
        return self.policy_ids(rows) == LIVE

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
            ended.append((int(world), game_outcome(scores[mine], scores[~mine])))
        return ended
