"""A league's seating: a world is seated anew only after its ended game's reset step, so
that step (its actions ignored) is acted by the ended game's players."""

from __future__ import annotations

import itertools

import numpy as np

from neuroplug.rl.self_play.seating import Seating, SeatingSpec


class Counting:
    """A draw table whose draws are 10, 11, 12, ...: each seat's opponent tells its draw."""

    def __init__(self) -> None:
        self.ids = itertools.count(10)

    def draw(self, rng) -> int:
        return next(self.ids)


def _step(seating, over_worlds=(), resetting=()):
    over, scores = np.zeros(4, bool), np.ones(4)
    for world in over_worlds:
        over[2 * world : 2 * world + 2] = True
    for world in resetting:  # a reset step's rows: first observations, reward 0
        scores[2 * world : 2 * world + 2] = 0.0
    seating.after_step(slice(0, 4), np.zeros(4), scores, over)


def test_a_world_is_seated_anew_after_the_reset_step_that_follows_its_game():
    seating = Seating(SeatingSpec(("left", "right"), 4, (), seed=0), np.arange(4))
    seating.begin_rollout(Counting())
    assert seating.seats.opponent.tolist() == [10, 11]
    _step(seating)
    _step(seating, over_worlds=[1])  # world 1's game ends on this step
    assert seating.seats.opponent.tolist() == [10, 11]  # its reset step: the same players
    _step(seating, resetting=[1])  # the reset step
    assert seating.seats.opponent.tolist() == [10, 12]
    assert seating.seats.score[2:].tolist() == [0.0, 0.0]  # the new game's score starts at 0
    records = seating.take_records()
    assert [(step, world, result) for step, world, result, _ in records.results] == [(1, 1, 11)]
    assert records.seated == [(-1, 0, 10), (-1, 1, 11), (2, 1, 12)]
    assert sorted(game[0] for game in records.games) == [1]  # the learner's game, at its end
