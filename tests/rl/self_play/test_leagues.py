"""Population-based training over self-play (``algo=pbt`` with ``selfplay=pool``): each
member plays its own envs against its own league (its snapshots and the bots), every
member and every league's snapshots acting in one forward; each learns from its own agents;
the table names the member; a resume continues every member's pool."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from frozen_models import perturbed, value_alone  # noqa: E402

from neuroplug.app import run_job  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.opponents.pool import LIVE  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

POPULATION = ["algo=pbt", "algo.learner=ppo", "algo.members=2", "algo.member.num_envs=4"]
GAME = [*POPULATION, "env=pong_duel", "selfplay=pool", "selfplay.bots=[random]", "logger=none"]


def test_every_members_lanes_act_as_their_players_in_one_forward(compose, tmp_path):
    learner = build_components(
        typed_experiment(compose([*GAME, f"run.output_dir={tmp_path}"]))
    ).algorithm
    loop = learner.rollout_loop
    first, second = loop.leagues.each
    snapshot = second.pool.add_snapshot(perturbed(learner.members[1].model, 1), segment=1)
    bot = next(entry.id for entry in first.pool.entries.values() if entry.kind == "bot")
    acting = loop.acting
    acting.refresh()
    acting.begin(np.arange(8), loop.leagues)  # every member's worlds seated here
    seats = [seating.seats for seating in acting.seatings]
    rng = np.random.default_rng(0)
    # Member 0: a game with itself, a game against the bot; member 1: its snapshot, itself.
    for mine, opponents in ((seats[0], [LIVE, bot]), (seats[1], [snapshot.id, LIVE])):
        for world, opponent in enumerate(opponents):
            mine.seat(world, opponent, rng)
    calls = []
    forward = acting.inner.act_members
    acting.inner.act_members = lambda *args: calls.append(args[1]) or forward(*args)
    observations = torch.randn(8, 6, generator=torch.Generator().manual_seed(0))
    acted = acting.act(observations, slice(0, 8), None, torch.Generator().manual_seed(1))
    assert len(calls) == 1  # both members and member 1's snapshot in one forward
    players = [(0, int(player)) for player in seats[0].policy_ids(slice(0, 4))] + [
        (1, int(player)) for player in seats[1].policy_ids(slice(0, 4))
    ]
    models = {
        (0, LIVE): learner.members[0].model,
        (1, LIVE): learner.members[1].model,
        (1, snapshot.id): snapshot.model,
    }
    for lane, player in enumerate(players):
        if player == (0, bot):
            assert acted.log_probs[lane] == 0 and acted.values[lane] == 0
            continue
        torch.testing.assert_close(
            acted.values[lane], value_alone(models[player], observations[lane])
        )
    learners = [member if player == LIVE else -1 for member, player in players]
    assert acting.calls[(0, 8)][-1].tolist() == learners  # who learns from each lane


def test_members_in_each_others_pools_play_with_their_live_weights(compose, tmp_path):
    run = [*GAME, "selfplay.members=true", "selfplay.members_learn=true"]
    learner = build_components(typed_experiment(compose([*run, f"run.output_dir={tmp_path}"])))
    learner = learner.algorithm
    loop = learner.rollout_loop
    first, second = loop.leagues.each
    [other] = [entry for entry in first.pool.entries.values() if entry.kind == "member"]
    assert (other.name, other.member) == ("member1", 1)
    assert [e.name for e in second.pool.entries.values() if e.kind == "member"] == ["member0"]
    acting = loop.acting
    acting.refresh()
    acting.begin(np.arange(8), loop.leagues)
    seats, rng = [seating.seats for seating in acting.seatings], np.random.default_rng(0)
    for world, opponent in enumerate([other.id, LIVE]):
        seats[0].seat(world, opponent, rng)
    for world in range(2):
        seats[1].seat(world, LIVE, rng)
    observations = torch.randn(8, 6, generator=torch.Generator().manual_seed(2))
    acted = acting.act(observations, slice(0, 8), None, torch.Generator().manual_seed(3))
    ids = seats[0].policy_ids(slice(0, 4))
    for lane in range(4):  # member 0's envs: member 1 plays where it is seated
        model = learner.members[1 if ids[lane] == other.id else 0].model
        torch.testing.assert_close(acted.values[lane], value_alone(model, observations[lane]))
    # Member 1 learns from the paddle it played in member 0's envs (its own weights acted).
    expected = np.where(ids == LIVE, 0, np.where(ids == other.id, 1, -1))
    assert acting.calls[(0, 8)][-1][:4].tolist() == expected.tolist()
    assert (ids == other.id).sum() == 1
    acting.members_learn = False  # selfplay.members_learn=false (the default): nobody does
    acting.act(observations, slice(0, 8), None, torch.Generator().manual_seed(3))
    assert acting.calls[(0, 8)][-1][:4].tolist() == np.where(ids == LIVE, 0, -1).tolist()


def test_the_table_names_each_member_and_a_resume_keeps_every_pool(compose, tmp_path):
    # Each member's pool: itself, the bot, the other member, its own snapshots.
    run = [*GAME, "selfplay.latest_share=0", "selfplay.members=true", "run.checkpoint_interval=1"]
    run_job(compose([*run, "run.max_segments=2", f"run.output_dir={tmp_path}"]))
    first = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    assert {row["member"] for row in first} == {"0", "1"}
    other = {"0": "member1", "1": "member0"}
    for member in "01":
        names = {row["opponent"] for row in first if row["member"] == member}
        assert names == {"latest", "random", other[member], "snapshot@1"}
    against_members = [int(r["games"]) for r in first if r["opponent"].startswith("member")]
    assert sum(against_members) > 0
    metrics = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert all(float(metrics[-1][f"algo/member{k}/selfplay/games"]) > 0 for k in (0, 1))
    run_job(compose([*run, "run.max_segments=3", f"run.resume={tmp_path}"]))
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    for member in "01":
        before = {r["opponent"]: r for r in first if r["member"] == member and r["segment"] == "2"}
        last = {r["opponent"]: r for r in rows if r["member"] == member and r["segment"] == "3"}
        assert set(last) == {"latest", "random", other[member], "snapshot@1", "snapshot@2"}
        for name, row in before.items():  # the totals go on from the checkpoint's
            total = int(row["games_total"]) + int(last[name]["games"])
            assert int(last[name]["games_total"]) == total


def test_a_member_learns_only_from_the_paddles_it_played(compose, tmp_path):
    learner = build_components(
        typed_experiment(compose([*GAME, "selfplay.latest_share=0", f"run.output_dir={tmp_path}"]))
    ).algorithm
    loop = learner.rollout_loop
    seen = []
    sample = loop.sample
    loop.sample = lambda *args, **kwargs: seen.append(sample(*args, **kwargs)) or seen[-1]
    learner.train_segment()
    valid = torch.cat([rollout.valid for rollout in seen]).reshape(-1, 4, 2)  # worlds, paddles
    assert valid.sum(-1).max() == 1  # never both paddles: the bot's is not learned from
    assert valid.float().mean() > 0.45  # and the member's is, but for each game's reset


@pytest.mark.parametrize("mapping", ["shared", "per_agent"])
def test_pools_that_together_would_not_fit_in_memory_are_refused_naming_the_pool_size(mapping):
    from neuroplug.config.schema import SelfPlayConfig
    from neuroplug.errors import ConfigError
    from neuroplug.rl.self_play.leagues import Leagues
    from neuroplug.runtime.devices import available_memory_bytes

    available = available_memory_bytes()
    if available is None:
        pytest.skip("this system does not say how much memory is available")
    model = torch.nn.Linear(1000, 1000)  # 4 MB a snapshot
    learners = [SimpleNamespace(model=model, context=SimpleNamespace(seed=k)) for k in range(6)]
    env = SimpleNamespace(agents=("paddle_0", "paddle_1"), policy_mapping=mapping)
    policies = 1 if mapping == "shared" else 2
    # One member's pools fit in 0.8 of the memory, three members' do not.
    pool_size = int(0.5 * available / (4_004_000 * policies))
    config = SelfPlayConfig(enabled=True, pool_size=pool_size)
    build = Leagues.of_learners if mapping == "shared" else Leagues.of_policies
    with pytest.raises(ConfigError, match=r"selfplay.pool_size: .*for each of \d members"):
        if mapping == "shared":
            build(config, env, [0, 1, 2], learners[:3], 4)
        else:
            build(config, env, learners, 4)


MEMBERS_ONLY = [*POPULATION, "env=pong_duel", "selfplay=pool", "selfplay.members=true",
                "selfplay.latest_share=0", "selfplay.pool_size=0", "logger=none"]  # fmt: skip


@pytest.mark.parametrize("core", ["none", "gru"])  # the stacked update; one by one
def test_a_member_learns_from_the_paddles_it_played_in_the_other_members_games(
    compose, tmp_path, core
):
    # Every game is member 0 against member 1: each paddle's steps teach the one who played.
    run = [*MEMBERS_ONLY, "selfplay.members_learn=true", f"net.core={core}"]
    run.append(f"run.output_dir={tmp_path}")
    learner = build_components(typed_experiment(compose(run))).algorithm
    loop = learner.rollout_loop
    booked, taught = [], []
    learn = loop.learn
    loop.learn = lambda rollout: booked.append(rollout) or learn(rollout)
    if loop.update is not None:
        stacked = loop.update.learn
        loop.update.learn = lambda rollout: taught.append(rollout) or stacked(rollout)
    else:
        for member in learner.members:
            alone = member.learn_rollout
            member.learn_rollout = lambda rollout, alone=alone: (
                taught.append(rollout) or alone(rollout)
            )
    assert (loop.update is None) == (core == "gru")
    learner.train_segment()
    for rollout in booked:
        own = rollout.valid.reshape(len(rollout.valid), 4, 2)  # steps, worlds, paddles
        guest = (rollout.guests >= 0).reshape(own.shape)
        assert own.sum(-1).max() == 1 and guest.sum(-1).max() == 1  # one paddle each
        assert not (own & guest).any()
        played = (own | guest).sum(-1)
        assert ((played == 0) | (played == 2)).all()  # both paddles learned, but on resets
        owners = torch.arange(8).div(4, rounding_mode="floor")
        guests = rollout.guests[rollout.guests >= 0]
        assert (guests != owners.expand_as(rollout.guests)[rollout.guests >= 0]).all()
        assert set(guests.tolist()) == {0, 1}
    # Each member's update saw its own 4 envs and the envs it played in as a guest (the
    # stacked update: both members' side by side).
    own_envs = 8 if core == "none" else 4
    assert taught and all(rollout.valid.shape[1] > own_envs for rollout in taught)
    for stats in learner.member_stats:
        assert 0.3 < stats["guest_share"] < 0.7  # half of its paddles are in the other's envs


def test_by_default_members_learn_only_from_their_own_envs(compose, tmp_path):
    run = [*MEMBERS_ONLY, f"run.output_dir={tmp_path}"]
    learner = build_components(typed_experiment(compose(run))).algorithm
    loop = learner.rollout_loop
    booked = []
    learn = loop.learn
    loop.learn = lambda rollout: booked.append(rollout) or learn(rollout)
    learner.train_segment()
    assert booked and all(rollout.guests is None for rollout in booked)
    assert all("guest_share" not in stats for stats in learner.member_stats)
