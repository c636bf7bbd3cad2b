"""``neuroplug.tools.match``: two policies (or a policy and a bot) in the same games, seats
alternating, the score with Wilson's interval."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from neuroplug.app import run_job  # noqa: E402
from neuroplug.tools.match import MatchError, main, match, wilson  # noqa: E402

BOT = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"


@pytest.fixture(scope="module")
def pong_run(tmp_path_factory, compose):
    out = tmp_path_factory.mktemp("pong_run")
    run_job(compose(["algo=ppo", "env=pong_duel", "algo.num_envs=4", "run.max_frames=2000",
                      "logger=none", f"run.output_dir={out}"]))  # fmt: skip
    return out


def test_wilsons_interval_holds_the_rate_and_narrows_with_games():
    low, high = wilson(45, 50)
    assert low < 0.9 < high <= 1.0
    assert wilson(450, 500)[1] - wilson(450, 500)[0] < high - low
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0


def test_a_match_counts_every_game_and_each_side_scores_its_own_agents(pong_run):
    result = match(pong_run, BOT, games=6, seed=3)
    assert result.wins + result.draws + result.losses == 6 == len(result.scores)
    for mine, theirs in result.scores:  # a zero-sum game of 3 points
        assert mine == -theirs and max(abs(mine), abs(theirs)) <= 3
    again = match(pong_run, BOT, games=6, seed=3)
    assert again.scores == result.scores  # the seeds decide the games
    mirrored = match(pong_run, str(pong_run), games=4, seed=0)
    assert mirrored.games == 4


def test_a_single_agent_run_is_refused_in_one_line(compose, tmp_path, capsys, pong_run):
    run_job(compose(["algo=ppo", "env=cartpole", "run.max_frames=500", "logger=none",
                     f"run.output_dir={tmp_path}"]))  # fmt: skip
    with pytest.raises(MatchError, match="one agent"):
        match(tmp_path, "random", games=2)
    with pytest.raises(SystemExit):
        main([str(tmp_path), "--opponent", "random"])
    assert "neuroplug.tools.match: error:" in capsys.readouterr().err
    # As an opponent, a run of another game is refused naming the argument.
    with pytest.raises(MatchError, match=r"--opponent: .* plays CartPole"):
        match(pong_run, str(tmp_path), games=2)


def test_a_run_of_a_policy_per_paddle_plays_the_one_named_on_its_own_paddle(
    compose, tmp_path, pong_run
):
    from neuroplug.envs.make import make_spec
    from neuroplug.opponents.matches import play_match
    from neuroplug.training.players import player_of

    run_job(compose(["algo=ppo", "env=pong_duel", "env.policy_mapping=per_agent",
                     "algo.num_envs=4", "run.max_frames=500", "logger=none",
                     f"run.output_dir={tmp_path}"]))  # fmt: skip
    with pytest.raises(MatchError, match="RUN: .* holds 2 policies: paddle_0.*--policy"):
        match(tmp_path, "random", games=2)
    with pytest.raises(MatchError, match="--opponent: .* holds 2 policies: paddle_0"):
        match(pong_run, str(tmp_path), games=2)
    with pytest.raises(MatchError, match="RUN: .*policy=paddle_9: no policy .* paddle_1"):
        match(tmp_path, "random", games=2, policy="paddle_9")
    result = match(tmp_path, BOT, games=4, seed=1, policy="paddle_1")
    env = make_spec(compose(["env=pong_duel"]).env)
    right = player_of(str(tmp_path), env, "RUN", "paddle_1")
    expected = play_match(right, player_of(BOT, env), env, [1], 4, seed=1)
    assert result.scores == expected.scores  # paddle_1's policy on paddle_1's seat
    assert match(pong_run, str(tmp_path), games=2, opponent_policy="paddle_0").games == 2


def test_watch_plays_two_policies_against_each_other_into_a_video(pong_run, tmp_path, capsys):
    from PIL import Image

    from neuroplug.tools.watch import main as watch_main

    out = tmp_path / "match.gif"
    watch_main([str(pong_run), "--opponent", BOT, "--episodes", "2", "--out", str(out)])
    shown = capsys.readouterr().out
    assert f"against {BOT}: 2 games" in shown and "Wilson" in shown
    with Image.open(out) as video:
        assert video.n_frames > 10 and video.size == (96, 96)  # the first game, court drawn
