"""The opponent pool: who a game draws, what retires, how ratings move, what a checkpoint
keeps."""

from __future__ import annotations

import numpy as np
import pytest

from neuroplug.opponents.pool import LIVE, OpponentPool

openskill = pytest.importorskip("openskill.models")


def pool_of(snapshots: int, pool_size: int = 8, latest_share: float = 0.0, sampling="uniform"):
    pool = OpponentPool(pool_size, latest_share, sampling, pfsp_power=2.0)
    for segment in range(snapshots):
        pool.add_snapshot(model=f"weights {segment}", segment=segment)
    return pool


def draws(pool: OpponentPool, count: int = 4000) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.array([pool.draw(rng) for _ in range(count)])


def test_latest_share_is_the_share_of_games_against_the_learner_itself():
    assert set(draws(pool_of(0, latest_share=0.0)).tolist()) == {LIVE}  # nothing else to play
    assert set(draws(pool_of(3, latest_share=1.0)).tolist()) == {LIVE}
    drawn = draws(pool_of(3, latest_share=0.25))
    assert abs(np.mean(drawn == LIVE) - 0.25) < 0.03
    assert set(drawn.tolist()) == {LIVE, 1, 2, 3}


def test_pfsp_plays_the_opponents_the_learner_beats_least_most():
    pool = pool_of(2, sampling="pfsp")
    rate = openskill.PlackettLuce()
    for _ in range(8):
        pool.record(1, "win", rate)  # snapshot 1 always beaten
        pool.record(2, "loss", rate)  # snapshot 2 never
    drawn = draws(pool)
    # Weights (1 - p)^2 with p smoothed: 1/10 beaten, 9/10 not -> 0.01 against 0.81.
    assert 0.005 < np.mean(drawn == 1) < 0.03
    assert set(drawn.tolist()) == {1, 2}  # the one always beaten is still played sometimes


def test_snapshots_beyond_the_pool_retire_and_go_once_no_world_plays_them():
    pool = pool_of(5, pool_size=3)
    retired = [entry.id for entry in pool.entries.values() if entry.retired]
    assert retired == [1, 2]
    assert {entry.id for entry in pool.candidates()} == {3, 4, 5}
    pool.drop_unused(playing={2})
    assert 1 not in pool.entries and 2 in pool.entries


def test_a_win_raises_the_learners_rating_and_lowers_the_opponents():
    pool = pool_of(1)
    rate = openskill.PlackettLuce()
    before = (pool.learner.mu, pool.entries[1].mu)
    pool.record(1, "win", rate)
    assert pool.learner.mu > before[0] and pool.entries[1].mu < before[1]
    rated = pool.learner.mu
    pool.record(LIVE, "win", rate)  # against itself: counted, rating untouched
    assert pool.learner.results["win"] == 1 and pool.learner.mu == rated
    rows = {row["opponent"]: row for row in pool.table()}
    assert rows["snapshot@0"]["wins"] == 1 and rows["snapshot@0"]["win_rate"] == 1.0


def test_a_checkpoint_keeps_every_entry_its_results_and_rating():
    pool = pool_of(2)
    pool.add_bot("random", "random", bot=lambda observations, rng: None)
    pool.add_member(3)
    pool.record(2, "loss", openskill.PlackettLuce())
    state = pool.state_dict(model_state=lambda model: model.upper())
    again = OpponentPool(8, 0.0, "uniform", 2.0)
    again.load_state_dict(state, make_model=lambda saved: saved.lower(), load_bot=lambda t: t)
    pool.start_segment()  # a checkpoint is taken between segments
    assert again.table() == pool.table()
    assert again.entries[1].model == "weights 0" and again.entries[3].bot == "random"
    assert again.entries[4].member == 3 and again.entries[4].kind == "member"
    assert again.next_id == pool.next_id


def test_other_members_are_drawn_and_reported_as_the_other_entries_are():
    pool = pool_of(1)
    members = [pool.add_member(k).id for k in (1, 2)]
    drawn = draws(pool, 3000)
    for id_ in [1, *members]:  # the snapshot and both members, a third of the games each
        assert abs(np.mean(drawn == id_) - 1 / 3) < 0.04
    pool.start_segment()
    pool.record(members[0], "win", openskill.PlackettLuce())
    report = pool.report()
    assert report["selfplay/win_rate/member1"] == 1.0 and np.isnan(
        report["selfplay/win_rate/member2"]
    )
    assert report["selfplay/snapshots"] == 1.0  # members are not snapshots
