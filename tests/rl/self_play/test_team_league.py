"""Self-play with a policy per team or agent (``env.policy_mapping`` with
``selfplay=pool``): each policy plays the others live or their halls of fame, every
policy's live weights and every hall's snapshots acting in one forward; a policy learns
only from the games it played live; the table names each hall; a resume keeps them."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from frozen_models import perturbed, value_alone  # noqa: E402

from neuroplug.app import run_job  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.opponents.pool import LIVE  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

GAME = [
    "algo=ppo",
    "env=pong_duel",
    "env.policy_mapping=per_agent",
    "selfplay=pool",
    "algo.num_envs=8",  # four worlds of two paddles
    "logger=none",
]


def test_each_policys_lanes_act_as_their_players_in_one_forward(compose, tmp_path):
    learner = build_components(
        typed_experiment(compose([*GAME, f"run.output_dir={tmp_path}"]))
    ).algorithm
    loop = learner.rollout_loop
    [league] = loop.leagues.each
    right = learner.members[1]  # paddle_1's policy
    snapshot = league.halls[1].add_snapshot(perturbed(right.model, 1), segment=1)
    acting = loop.acting
    acting.refresh()
    acting.begin(np.arange(8), loop.leagues)
    [seating] = acting.seatings
    rng = np.random.default_rng(0)
    seating.seats.seat(0, (LIVE, snapshot.id), rng)  # paddle_0 against paddle_1's past self
    for world in (1, 2, 3):
        seating.seats.seat(world, (LIVE, LIVE), rng)
    calls = []
    forward = acting.inner.act_members
    acting.inner.act_members = lambda *args: calls.append(args[1]) or forward(*args)
    observations = torch.randn(8, 6, generator=torch.Generator().manual_seed(0))
    acted = acting.act(observations, slice(0, 8), None, torch.Generator().manual_seed(1))
    assert len(calls) == 1  # both policies and the snapshot in one forward
    for lane in range(8):
        model = learner.members[lane % 2].model
        if lane == 1:
            model = snapshot.model
        torch.testing.assert_close(acted.values[lane], value_alone(model, observations[lane]))
    # Each live lane teaches its paddle's policy; the snapshot's lane nobody.
    learners = [-1 if lane == 1 else lane % 2 for lane in range(8)]
    assert acting.calls[(0, 8)][-1].tolist() == learners


def test_against_the_halls_only_the_drawn_policy_learns(compose, tmp_path):
    run = [*GAME, "selfplay.latest_share=0", "algo.segment_steps=4096",
           "selfplay.snapshot_interval=1"]  # fmt: skip
    learner = build_components(typed_experiment(compose([*run, f"run.output_dir={tmp_path}"])))
    learner = learner.algorithm
    loop = learner.rollout_loop
    seen = []
    sample = loop.sample
    loop.sample = lambda *args, **kwargs: seen.append(sample(*args, **kwargs)) or seen[-1]
    learner.train_segment()  # the halls are empty: every game live, both paddles learn
    first = torch.cat([rollout.valid for rollout in seen]).reshape(-1, 4, 2)
    assert first.float().mean() > 0.9
    seen.clear()
    stats = learner.train_segment().stats  # each hall holds a snapshot: no new game is live
    valid = torch.cat([rollout.valid for rollout in seen]).reshape(-1, 4, 2)  # worlds, paddles
    both = valid.all(-1)
    switched = 0
    for world in range(4):  # a game begun live plays on to its end; none begins live after
        one_side = torch.nonzero(~both[:, world])
        if len(one_side):
            assert not both[int(one_side[0]) :, world].any()
            switched += 1
    assert switched >= 2
    assert (valid[..., 0].float().mean() > 0.1) and (valid[..., 1].float().mean() > 0.1)
    assert stats["selfplay/live_games"] <= 4  # those begun before the halls held anyone
    assert stats["selfplay/paddle_0_hall/games"] + stats["selfplay/paddle_1_hall/games"] > 0
    learner.close()


@pytest.mark.parametrize("algo", ["ppo", "appo"])
def test_the_table_names_each_hall_and_a_resume_keeps_them(compose, tmp_path, algo):
    # APPO plays its games through its acting copy of each policy.
    run = [*GAME, f"algo={algo}", "selfplay.latest_share=0.5", "algo.segment_steps=1024",
           "selfplay.snapshot_interval=1", "run.checkpoint_interval=1", "run.eval_interval=0"]  # fmt: skip
    run_job(compose([*run, "run.max_segments=2", f"run.output_dir={tmp_path}"]))
    first = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    assert {row["hall"] for row in first} == {"paddle_0", "paddle_1"}
    for hall in ("paddle_0", "paddle_1"):
        last = {row["opponent"] for row in first if row["hall"] == hall and row["segment"] == "2"}
        assert last == {"latest", "snapshot@1"}
    saved = load_checkpoint(tmp_path)["algorithm"]["self_play"]
    assert [len(hall["entries"]) for hall in saved["halls"]] == [3, 3]  # latest, @1, @2
    run_job(compose([*run, "run.max_segments=3", f"run.resume={tmp_path}"]))
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    for hall in ("paddle_0", "paddle_1"):
        before = {r["opponent"]: r for r in first if r["hall"] == hall and r["segment"] == "2"}
        last = {r["opponent"]: r for r in rows if r["hall"] == hall and r["segment"] == "3"}
        assert set(last) == {"latest", "snapshot@1", "snapshot@2"}
        for name, row in before.items():  # the totals go on from the checkpoint's
            assert int(last[name]["games_total"]) == int(row["games_total"]) + int(
                last[name]["games"]
            )


POPULATION = [
    "algo=pbt",
    "algo.learner=ppo",
    "algo.members=2",
    "algo.member.num_envs=4",  # two worlds a member
    "env=pong_duel",
    "env.policy_mapping=per_agent",
    "selfplay=pool",
    "logger=none",
]


def test_each_member_of_a_population_plays_its_own_worlds_with_halls_of_its_own(compose, tmp_path):
    learner = build_components(
        typed_experiment(compose([*POPULATION, f"run.output_dir={tmp_path}"]))
    ).algorithm
    loop = learner.rollout_loop
    first, second = loop.leagues.each
    assert (first.first, second.first) == (0, 2)  # member 1's paddles: learners 2 and 3
    snapshot = second.halls[0].add_snapshot(perturbed(learner.members[2].model, 1), segment=1)
    acting = loop.acting
    acting.refresh()
    acting.begin(np.arange(8), loop.leagues)
    rng = np.random.default_rng(0)
    for seating in acting.seatings:
        for world in range(2):
            seating.seats.seat(world, (LIVE, LIVE), rng)
    acting.seatings[1].seats.seat(0, (snapshot.id, LIVE), rng)  # member 1's paddle_0 hall
    observations = torch.randn(8, 6, generator=torch.Generator().manual_seed(0))
    acted = acting.act(observations, slice(0, 8), None, torch.Generator().manual_seed(1))
    players = [0, 1, 0, 1, None, 3, 2, 3]  # lane 4: the snapshot
    for lane, player in enumerate(players):
        model = snapshot.model if player is None else learner.members[player].model
        torch.testing.assert_close(acted.values[lane], value_alone(model, observations[lane]))
    learners = [-1 if player is None else player for player in players]
    assert acting.calls[(0, 8)][-1].tolist() == learners  # each policy its own lanes


def test_a_populations_table_names_member_and_hall_and_its_checkpoint_holds_them(compose, tmp_path):
    run = [*POPULATION, "algo.member.segment_steps=512", "selfplay.snapshot_interval=1",
           "run.max_segments=2", "run.eval_interval=0", f"run.output_dir={tmp_path}"]  # fmt: skip
    run_job(compose(run))
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    assert {(row["member"], row["hall"]) for row in rows} == {
        (member, hall) for member in "01" for hall in ("paddle_0", "paddle_1")
    }
    leagues = load_checkpoint(tmp_path)["algorithm"]["self_play"]["leagues"]
    assert [len(league["halls"]) for league in leagues] == [2, 2]


def test_the_start_up_line_says_each_policy_keeps_a_hall_of_fame(compose, tmp_path, capsys):
    run = [*GAME, "logger=console", "selfplay.snapshot_interval=3", "run.max_segments=1",
           "run.eval_interval=0", f"run.output_dir={tmp_path}"]  # fmt: skip
    run_job(compose(run))
    said = "self-play: a hall of fame per policy of 8 snapshots (one every 3 segments)"
    assert said in capsys.readouterr().out
