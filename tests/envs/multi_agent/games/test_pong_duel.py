"""The two-paddle Pong in numbers: each paddle sees the court from its own side, points
and game ends, and the tracking bot is a real but beatable opponent."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from neuroplug.envs.multi_agent.games.pong_duel import (  # noqa: E402
    DOWN,
    STAY,
    UP,
    parallel_env,
    tracking_bot,
)


def test_each_paddle_sees_the_court_from_its_own_side():
    env = parallel_env()
    seen, _ = env.reset(seed=3)
    left, right = seen["paddle_0"], seen["paddle_1"]
    assert left[2] + right[2] == pytest.approx(1.0)  # the ball's x mirrored
    assert left[4] == -right[4]  # and its horizontal velocity
    assert left[3] == right[3] and left[5] == right[5]
    seen, *_ = env.step({"paddle_0": UP, "paddle_1": DOWN})
    assert seen["paddle_0"][0] > 0.5 > seen["paddle_1"][0]
    assert seen["paddle_0"][1] == seen["paddle_1"][0]  # the other's height


def test_a_missed_ball_is_a_point_and_the_game_ends_at_the_points():
    env = parallel_env(points=2)
    env.reset(seed=0)
    totals, ended, steps = {"paddle_0": 0.0, "paddle_1": 0.0}, False, 0
    while not ended:
        # The left paddle flees to the top corner; the right one follows the ball.
        observations = env._observations()
        right = tracking_bot(observations["paddle_1"][None], np.random.default_rng(steps))[0]
        _, rewards, terminated, truncated, _ = env.step({"paddle_0": UP, "paddle_1": right})
        for agent, reward in rewards.items():
            totals[agent] += reward
        ended = any(terminated.values()) or any(truncated.values())
        steps += 1
    assert totals["paddle_0"] == -totals["paddle_1"]
    assert abs(totals["paddle_0"]) <= 2 and max(env.score) == 2 and env.agents == []


def play(left, right, games: int, seed: int = 0) -> float:
    """The left player's share of games won."""
    rng, won = np.random.default_rng(seed), 0
    env = parallel_env(points=3)
    for game in range(games):
        seen, _ = env.reset(seed=seed + game)
        over = False
        while not over:
            actions = {
                "paddle_0": int(left(seen["paddle_0"][None], rng)[0]),
                "paddle_1": int(right(seen["paddle_1"][None], rng)[0]),
            }
            seen, _, terminated, truncated, _ = env.step(actions)
            over = terminated["paddle_0"] or truncated["paddle_0"]
        won += env.score[0] > env.score[1]
    return won / games


def test_the_tracking_bot_beats_random_play_and_a_steeper_player_beats_it():
    def random_play(observations, rng):
        return rng.integers(0, 3, len(observations))

    def full_speed_tracker(observations, rng):
        own, ball = observations[:, 0], observations[:, 3]
        return np.where(ball > own + 0.02, UP, np.where(ball < own - 0.02, DOWN, STAY))

    assert play(tracking_bot, random_play, games=20) >= 0.9
    assert play(full_speed_tracker, tracking_bot, games=20) >= 0.6
