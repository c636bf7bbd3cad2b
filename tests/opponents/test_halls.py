"""A policy's game against the other policies' halls of fame, drawn the same way by the
learners per team and the populations per policy."""

from __future__ import annotations

import numpy as np

from neuroplug.opponents.halls import draw_against_halls
from neuroplug.opponents.pool import LIVE, DrawTable

EMPTY = DrawTable(0.5, (), ())


def test_a_game_is_live_while_another_hall_is_empty():
    rng = np.random.default_rng(0)
    with_entry = DrawTable(0.0, (4,), (1.0,))
    assert all(draw_against_halls(0, (EMPTY, EMPTY), rng) is None for _ in range(20))
    # Policy 1 faces policy 0's empty hall: live; policy 0 faces policy 1's entry 4.
    assert draw_against_halls(1, (EMPTY, with_entry), rng) is None
    assert draw_against_halls(0, (EMPTY, with_entry), rng) == (LIVE, 4)


def test_against_the_halls_every_other_policy_plays_a_past_self():
    rng = np.random.default_rng(1)
    tables = (
        DrawTable(0.5, (1, 2), (0.5, 0.5)),
        DrawTable(0.5, (7,), (1.0,)),
        DrawTable(0.5, (3, 9), (0.25, 0.75)),
    )
    drawn = [draw_against_halls(1, tables, rng) for _ in range(4000)]
    against = [game for game in drawn if game is not None]
    assert 0.45 < len(against) / len(drawn) < 0.55  # latest_share of the games live
    assert {game[1] for game in against} == {LIVE}  # the drawn policy plays itself
    assert {game[0] for game in against} == {1, 2} and {game[2] for game in against} == {3, 9}
    assert 0.7 < np.mean([game[2] == 9 for game in against]) < 0.8  # by the table's weights
