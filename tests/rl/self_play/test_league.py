"""Self-play through a learner's run: the learner learns from its own agents only, the
table and ratings are written each segment, and a checkpoint carries the pool."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from neuroplug.app import run_job  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

GAME = ["algo=ppo", "env=pong_duel", "selfplay=pool", "algo.num_envs=8"]


def test_against_a_bot_the_learner_learns_from_its_own_paddle_only(compose, tmp_path):
    config = compose(
        [*GAME, "selfplay.latest_share=0", "selfplay.bots=[random]", "logger=none",
         f"run.output_dir={tmp_path}"]
    )  # fmt: skip
    learner = build_components(typed_experiment(config)).algorithm
    seen = []
    learn = learner.learn_rollout
    learner.learn_rollout = lambda rollout: seen.append(rollout.valid.clone()) or learn(rollout)
    segment = learner.train_segment()
    valid = torch.stack(seen).reshape(-1, 4, 2)  # steps, worlds, paddles
    assert valid.sum(-1).max() == 1  # never both paddles: the bot's is not learned from
    assert valid.float().mean() > 0.45  # and the learner's is, but for each game's reset
    # The learner's games are its paddle's: a game's score is +-points or a truncation's.
    assert len(segment.returns) and all(abs(score) <= 3 for score in segment.returns)
    assert segment.stats["selfplay/games"] > 0 and 0 <= segment.stats["selfplay/win_rate"] <= 1
    # Paid its points: what it trained on is what it scored, game by game.
    assert segment.stats["trained_return_mean"] == pytest.approx(np.mean(segment.returns))
    rows = segment.tables["tournament"]
    assert [row["opponent"] for row in rows] == ["latest", "random"]
    assert rows[1]["games"] == segment.stats["selfplay/games"]  # every game against the bot


def test_a_resumed_run_continues_the_pool_its_results_and_ratings(compose, tmp_path):
    run = [*GAME, "selfplay.bots=[random]", "logger=none", "run.checkpoint_interval=1"]
    run_job(compose([*run, "run.max_segments=2", f"run.output_dir={tmp_path}"]))
    first = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    pool = load_checkpoint(tmp_path)["algorithm"]["self_play"]
    snapshot = next(entry for entry in pool["entries"] if entry["kind"] == "snapshot")
    assert snapshot["model"] and snapshot["name"] == "snapshot@1"  # its weights, kept
    names = [row["opponent"] for row in first if row["segment"] == "2"]
    assert names == ["latest", "random", "snapshot@1"]  # the first segment's snapshot joined
    run_job(compose([*run, "run.max_segments=3", f"run.resume={tmp_path}"]))
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    last = {row["opponent"]: row for row in rows if row["segment"] == "3"}
    before = {row["opponent"]: row for row in first if row["segment"] == "2"}
    assert set(last) == {"latest", "random", "snapshot@1", "snapshot@2"}
    for name, row in before.items():  # the totals go on from the checkpoint's
        assert int(last[name]["games_total"]) == int(row["games_total"]) + int(last[name]["games"])


def test_appo_plays_its_games_through_its_acting_copy(compose, tmp_path):
    """APPO samples with a copy of its model while it learns: that copy is the learner's
    player, and its games fill the table as PPO's do."""
    run = ["algo=appo", *GAME[1:], "selfplay.bots=[random]", "logger=none", "run.max_segments=2"]
    run_job(compose([*run, f"run.output_dir={tmp_path}"]))
    assert "name: appo" in (tmp_path / "config.yaml").read_text()
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    assert {row["opponent"] for row in rows} >= {"latest", "random", "snapshot@1"}
    assert sum(int(row["games"]) for row in rows) > 0
    metrics = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert metrics[-1]["algo/selfplay/games"] and float(metrics[-1]["algo/selfplay/games"]) > 0


def test_an_evaluation_against_a_bot_logs_the_score_rate_and_its_interval(compose, tmp_path):
    run = [*GAME, "selfplay.bots=[random]", "logger=none", "run.max_segments=2",
           "run.eval_interval=1", "run.eval_episodes=6",
           "selfplay.eval_opponent=neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"]  # fmt: skip
    summary = run_job(compose([*run, f"run.output_dir={tmp_path}"]))
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    for row in rows:
        rate, low, high = (float(row[f"eval/win_rate{end}"]) for end in ("", "_low", "_high"))
        assert 0 <= low <= rate <= high <= 1
        assert rate in {k / 12 for k in range(13)}  # six games, draws half
        assert -3 <= float(row["eval_return_mean"]) <= 3  # the learner's own paddle's score
    assert summary["eval_return_mean"] == float(rows[-1]["eval_return_mean"])


def test_opponents_change_only_between_games_and_start_from_a_fresh_state(compose, tmp_path):
    """PufferLib's open bug is an opponent swapped mid-game: here a world's opponent changes
    only between games (after the reset step that follows a game's end, which the ended
    game's players still act: their values of the last observations are what a truncated
    game bootstraps from), and every agent's recurrent state is zero on the first step of
    the next game."""
    config = compose(
        [*GAME, "net.core=gru", "selfplay.latest_share=0.3", "selfplay.bots=[random]",
         "logger=none", f"run.output_dir={tmp_path}"]
    )  # fmt: skip
    learner = build_components(typed_experiment(config)).algorithm
    league = learner.rollout_loop.leagues.each[0]
    league.pool.add_snapshot(copy_of(learner.model), segment=0)  # a second network to play
    changes = []
    acting = learner.rollout_loop.acting
    watch = acting.watch

    ended_before = {}

    def recorded(rows, batch):  # the seats of the worlds this process steps
        seats = acting.seatings[0].seats
        before = seats.opponent.copy()
        watch(rows, batch)
        worlds = slice(rows.start // 2, rows.stop // 2)
        changed = (before != seats.opponent)[worlds]
        # This step is a reset step where the previous one ended the world's game.
        reset = ended_before.get(rows.start, np.zeros(len(changed), bool))
        ended_before[rows.start] = batch.game_over.reshape(-1, 2).any(axis=1)
        changes.append((changed, reset))

    acting.watch = recorded
    seen = []
    learn = learner.learn_rollout
    learner.learn_rollout = lambda rollout: seen.append(rollout) or learn(rollout)
    learner.train_segment()
    assert changes and any(changed.any() for changed, _ in changes)
    for changed, reset in changes:
        assert not (changed & ~reset).any()  # no world's opponent changed mid-game
    starts = torch.cat([rollout.starts for rollout in seen])  # a game's first acted step
    states = torch.cat([rollout.states for rollout in seen])
    assert starts.sum() >= 8  # every world's next game, at least
    assert (states[starts] == 0).all() and (states[~starts] != 0).any()


def copy_of(model):
    import copy

    return copy.deepcopy(model).requires_grad_(False)


def test_without_openskill_self_play_is_refused_saying_what_to_install(
    compose, tmp_path, monkeypatch
):
    from neuroplug.errors import ConfigError

    monkeypatch.setitem(sys.modules, "openskill", None)
    monkeypatch.setitem(sys.modules, "openskill.models", None)
    with pytest.raises(ConfigError, match=r"selfplay: .*openskill.*neuroplug\[multiagent\]"):
        run_job(compose([*GAME, "logger=none", f"run.output_dir={tmp_path}"]))


def test_an_evaluation_against_another_runs_policy(compose, tmp_path):
    import numpy as np

    from neuroplug import load_policy
    from neuroplug.envs.make import make_spec
    from neuroplug.errors import ConfigError
    from neuroplug.training.players import player_of

    first, second = tmp_path / "first", tmp_path / "second"
    quiet = [*GAME, "logger=none", "run.max_segments=1", "run.eval_episodes=4"]
    run_job(compose([*quiet, f"run.output_dir={first}"]))
    # The opponent is the first run's deployed policy, acting as load_policy's module does.
    config = typed_experiment(compose(GAME))
    player = player_of(str(first), make_spec(config.env))
    observations = np.random.default_rng(0).normal(size=(16, 6)).astype(np.float32)
    actions, _ = player.act(observations, None, np.random.default_rng(0))
    with torch.no_grad():
        expected = load_policy(first)(torch.from_numpy(observations))
    assert np.array_equal(np.asarray(actions), expected.numpy())
    summary = run_job(
        compose([*quiet, f"selfplay.eval_opponent={first}", f"run.output_dir={second}"])
    )
    row = list(csv.DictReader((second / "metrics.csv").open()))[-1]
    assert 0 <= float(row["eval/win_rate_low"]) <= float(row["eval/win_rate"]) <= 1
    assert summary["eval_return_mean"] == float(row["eval_return_mean"])
    # A run of another game is refused, naming the setting, before anything is trained.
    other = typed_experiment(compose(["algo=ppo", "env=simple_spread"]))
    with pytest.raises(ConfigError, match=r"selfplay.eval_opponent: .* plays pong_duel"):
        player_of(str(first), make_spec(other.env))
