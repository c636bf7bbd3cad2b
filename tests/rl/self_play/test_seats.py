"""Who plays which agent of a world, and a game's outcome."""

from __future__ import annotations

import numpy as np
import pytest

from neuroplug.errors import ConfigError
from neuroplug.opponents.pool import LIVE, DrawTable
from neuroplug.opponents.seating import learner_agent_indices
from neuroplug.rl.self_play.seats import TEAM_STRIDE, Seats, TeamDraw, TeamSeats

AGENTS = ("adversary_0", "adversary_1", "agent_0")


def test_learner_agents_are_named_by_name_or_role_and_must_leave_the_opponent_some():
    assert learner_agent_indices(AGENTS, ["adversary"]) == [0, 1]
    assert learner_agent_indices(AGENTS, ["agent_0"]) == [2]
    assert learner_agent_indices(AGENTS, []) == []
    with pytest.raises(ConfigError, match=r"selfplay\.learner_agents: 'runner'.*adversary_0"):
        learner_agent_indices(AGENTS, ["runner"])
    with pytest.raises(ConfigError, match="leaving the opponent none"):
        learner_agent_indices(AGENTS, ["adversary", "agent"])


def test_a_symmetric_game_seats_the_learner_on_one_agent_the_opponent_on_the_others():
    seats = Seats(("paddle_0", "paddle_1"), num_envs=8, learner_agents=[])
    rng = np.random.default_rng(0)
    for world in range(4):
        seats.seat(world, opponent=7, rng=rng)
    players = seats.policy_ids(slice(0, 8)).reshape(4, 2)
    assert (np.sort(players, axis=1) == [LIVE, 7]).all()
    assert (seats.learnable(slice(0, 8)) == (seats.policy_ids(slice(0, 8)) == LIVE)).all()
    seats.seat(0, opponent=LIVE, rng=rng)  # against itself: every agent learnable
    assert seats.learnable(slice(0, 2)).all()


def test_a_game_is_won_by_the_higher_score_and_ends_with_every_agent():
    seats = Seats(AGENTS, num_envs=6, learner_agents=[0, 1])
    rng = np.random.default_rng(0)
    seats.seat(0, 3, rng)
    seats.seat(1, 3, rng)
    assert seats.add_rewards(slice(0, 6), np.array([1.0, 0, 0, 0, 0, 2]), np.zeros(6, bool)) == []
    over = np.array([True, True, True, False, False, False])
    assert seats.add_rewards(slice(0, 6), np.zeros(6), over) == [(0, "win")]  # mean 0.5 > 0
    over = ~over
    assert seats.add_rewards(slice(0, 6), np.zeros(6), over) == [(1, "loss")]
    seats.seat(1, 3, rng)
    assert seats.add_rewards(slice(3, 6), np.zeros(3), np.ones(3, bool)) == [(1, "draw")]


def test_with_a_policy_per_team_only_the_live_side_learns_and_its_score_decides():
    # Two worlds of two adversaries (policy 0) and a runner (policy 1).
    seats = TeamSeats(AGENTS, num_envs=6, of_agent=(0, 0, 1))
    rng = np.random.default_rng(0)
    seats.seat(0, (LIVE, 5), rng)  # the adversaries against the runner's hall entry 5
    seats.seat(1, (LIVE, LIVE), rng)  # a live game: both learn
    everyone = slice(0, 6)
    assert seats.learnable(everyone).tolist() == [True, True, False, True, True, True]
    keys = seats.policy_ids(everyone)
    assert keys.tolist() == [LIVE, LIVE, TEAM_STRIDE + 5, LIVE, LIVE, TEAM_STRIDE + LIVE]
    assert seats.opponent_of(0) == (LIVE, 5) and seats.opponent_of(1) == (LIVE, LIVE)
    over = np.ones(6, dtype=bool)
    ended = seats.add_rewards(everyone, np.array([1.0, 0.0, 2.0, 1.0, 1.0, 0.0]), over)
    # World 0: the adversaries' mean 0.5 against the runner's 2: a loss for the live side;
    # world 1 had no opponent to rate.
    assert ended == [(0, "loss"), (1, "")]


def test_a_worlds_draw_picks_the_policy_uniformly_then_its_game():
    rng = np.random.default_rng(2)
    draw = TeamDraw((DrawTable(0.5, (), ()), DrawTable(0.0, (4,), (1.0,))))
    games = [draw.draw(rng) for _ in range(4000)]
    assert set(games) == {(LIVE, LIVE), (LIVE, 4)}
    # Policy 0 (half the games) always meets entry 4; policy 1 faces an empty hall: live.
    assert 0.45 < np.mean([game == (LIVE, 4) for game in games]) < 0.55
