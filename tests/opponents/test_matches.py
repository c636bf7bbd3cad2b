"""Games between two players (:mod:`neuroplug.opponents.matches`) in worlds whose agents
may leave before the game ends."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from neuroplug.config.schema import EnvConfig  # noqa: E402
from neuroplug.envs.make import make_spec  # noqa: E402
from neuroplug.opponents.matches import BotPlayer, play_match  # noqa: E402


def test_an_agent_that_leaves_stops_acting_and_keeps_what_it_scored():
    # Guards earn 1 a step for action 1, the runner for action 2; the runner leaves a step
    # before the game's 3 steps end.
    env = make_spec(
        EnvConfig(parallel_env="parallel_worlds:roles", kwargs={"early": True, "length": 3})
    )
    acted = []

    def runner(observations, rng):
        acted.append(len(observations))
        return np.full(len(observations), 2)

    guards = BotPlayer("guards", lambda observations, rng: np.ones(len(observations), int))
    result = play_match(guards, BotPlayer("runner", runner), env, team=[0, 1], games=3)
    assert result.scores == [(3.0, 2.0)] * 3 and result.wins == 3
    assert acted == [3, 3]  # three games' runners, on the two steps before they left
