"""PPO end to end: it solves CartPole, is reproducible, resumes everything its envs allow,
and counts games honestly however long they are."""

from __future__ import annotations

import csv
import math
import re

import pytest
import torch
from neuroplug_learners.ppo import PPOConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import check_learner_resume, resolved_settings
from neuroplug.testing.resume_check import same
from neuroplug.tools.watch import watch
from neuroplug.training.checkpoint import (
    load_checkpoint,
)

# RL Zoo's CartPole-v1 PPO settings on a 64-64 MLP: the shipped preset.
CARTPOLE = ["+experiment=ppo_cartpole"]


def test_ppo_solves_cartpole_with_the_preset(compose, tmp_path):
    summary = run_job(
        compose(
            [
                *CARTPOLE,
                "logger=none",
                "algo.segment_steps=4096",
                "run.max_frames=60000",
                "run.eval_interval=1",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    assert summary["eval_return_mean"] >= 475, summary
    # The deployed policy replays the very episodes of the final evaluation.
    replayed = watch(tmp_path, video=False)
    assert replayed.returns.mean() == pytest.approx(summary["eval_return_mean"])


def test_ppo_resumes_everything_but_the_games_in_progress(compose, tmp_path):
    tiny = [*CARTPOLE, "algo.segment_steps=512", "run.max_frames=4096", "run.eval_episodes=2"]
    left, _ = check_learner_resume(compose, tiny, tmp_path, segments=3, stop_at=1)
    assert left["algorithm"]["learner"]["updates"] > 0


def test_ppo_runs_are_reproducible_from_their_seed(compose, tmp_path):
    tiny = [*CARTPOLE, "algo.segment_steps=512", "run.max_segments=3", "logger=none"]
    for run in ("a", "b"):
        run_job(compose([*tiny, f"run.output_dir={tmp_path / run}"]))
    left, right = (load_checkpoint(tmp_path / run) for run in ("a", "b"))
    assert same(left["algorithm"], right["algorithm"]) and left["counters"] == right["counters"]


def test_a_short_pong_run_counts_frames_and_scores_whole_games(compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=ppo",
                "env=pong",
                "env.max_episode_steps=200",
                "algo.num_envs=4",
                "algo.rollout_length=64",
                "algo.segment_steps=1024",
                "algo.reward_clip=true",
                "algo.episodic_life=true",
                "run.max_segments=1",
                "run.eval_episodes=1",
                "logger=console",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    counters = load_checkpoint(tmp_path)["counters"]
    assert counters["frames"] == 4 * counters["env_steps"]
    # 256 steps per env: each env's 200-step game ends, and its reset step is not counted.
    assert counters["env_steps"] == summary["env_steps"] == 1024 - 4
    assert counters["episodes"] == 4
    # Evaluation plays whole games and reports true (unclipped) scores.
    assert -21 <= summary["eval_return_mean"] <= 21 and not math.isnan(summary["eval_return_mean"])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("epochs", 0),
        ("clip_coef", 0.0),
        ("gae_lambda", -0.1),
        ("num_envs", 0),
        ("encoder_precision", "float16"),
    ],
)
def test_bad_ppo_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"algo.{field}"):
        resolved_settings(PPOConfig(name="ppo", **{field: value}))


def test_an_unknown_encoder_precision_is_refused_before_the_task_is_known():
    with pytest.raises(ConfigError, match="algo.encoder_precision.*auto, float32, bfloat16"):
        PPOConfig(name="ppo", encoder_precision="half")


def test_continuous_actions_train_a_gaussian_policy_on_games_longer_than_a_segment(
    compose, tmp_path
):
    summary = run_job(
        compose(
            [
                "algo=ppo",
                "env=pendulum",
                "net.hidden_sizes=[16]",
                "algo.num_envs=16",
                "algo.rollout_length=16",
                "algo.segment_steps=1024",
                "run.max_segments=4",
                "run.eval_episodes=1",
                "logger=none",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    state = load_checkpoint(tmp_path)
    assert "log_std" in state["algorithm"]["model"]  # the learned std of the Gaussian
    assert math.isfinite(summary["eval_return_mean"])
    # 64 steps per env and segment, 256 in all: every env plays one whole 200-step game
    # across four segments, and the reset step after it is not counted.
    rows = list(csv.DictReader(open(tmp_path / "metrics.csv")))
    games = [(int(row["episodes"]), row["episode_length_mean"]) for row in rows]
    assert [count for count, _ in games] == [0, 0, 0, 16]
    assert float(games[-1][1]) == 200.0
    assert summary["env_steps"] == 4 * 1024 - 16


def test_a_long_segment_shows_its_progress_in_a_pipe(compose, tmp_path, capsys, monkeypatch):
    from neuroplug.loggers.console import ConsoleLogger

    monkeypatch.setattr(ConsoleLogger, "PLAIN_INTERVAL_S", 0.0)  # as if 30 s passed each time
    overrides = [*CARTPOLE, "algo.segment_steps=1024", "run.max_segments=1", "logger=console"]
    run_job(compose([*overrides, "run.eval_episodes=1", f"run.output_dir={tmp_path}"]))
    out = capsys.readouterr().out
    # Four rollouts of 256 steps (less the reset steps): a progress line after each, then
    # the segment's own line.
    progress = [line for line in out.splitlines() if line.startswith("segment 1 running")]
    steps = [int(re.search(r"steps (\d+)/1.02k", line).group(1)) for line in progress]
    assert len(steps) == 4 and steps == sorted(steps) and 200 < steps[0] <= 256
    assert any(line.startswith("seg    1 | steps") for line in out.splitlines())
    assert "generation" not in out


MASKED = [*CARTPOLE, "env.observation_mask=[1,3]", "net.core=gru"]
"""CartPole without its velocities, with a GRU core: a task that needs memory."""


def test_a_recurrent_ppo_learns_cartpole_without_velocities_where_a_feed_forward_one_cannot(
    compose, tmp_path
):
    # PPO at 40k frames, final evaluation, seeds 0-2 (2026-11-26): GRU 482/500/181, MLP
    # 43/46/42. A core reset at every step would be a feed-forward network, and fail.
    budget = ["run.max_frames=40000", "run.seed=1", "logger=none"]
    returns = {}
    for core in ("gru", "none"):
        overrides = [*MASKED, *budget, f"net.core={core}", f"run.output_dir={tmp_path / core}"]
        returns[core] = run_job(compose(overrides))["eval_return_mean"]
    assert returns["gru"] > 150 and returns["none"] < 80, returns


@pytest.mark.parametrize("core", ["gru", "lstm"])
def test_a_recurrent_ppo_resumes_and_replays_with_its_core(compose, tmp_path, core):
    tiny = [*MASKED, f"net.core={core}", "algo.segment_steps=512", "run.max_frames=4096"]
    tiny.append("run.eval_episodes=3")
    left, _ = check_learner_resume(compose, tiny, tmp_path / "resume", segments=3, stop_at=1)
    assert left["algorithm"]["learner"]["updates"] > 0
    # The deployed policy, core included, replays the final evaluation's very episodes.
    run = tmp_path / "replay"
    summary = run_job(compose([*tiny, "logger=none", f"run.output_dir={run}"]))
    replayed = watch(run, video=False)
    assert replayed.returns.mean() == pytest.approx(summary["eval_return_mean"])


def test_a_recurrent_rollout_is_cut_into_chunks_of_one_env_with_their_first_states():
    from types import SimpleNamespace

    from neuroplug_learners.ppo_batches import chunked

    steps, envs, length = 6, 2, 3
    grid = torch.arange(steps * envs, dtype=torch.float32).reshape(steps, envs)
    rollout = SimpleNamespace(
        observations=grid.unsqueeze(2),
        actions=grid.long(),
        log_probs=grid,
        values=grid,
        valid=torch.ones(steps, envs, dtype=torch.bool),
        states=grid.unsqueeze(2),
        starts=grid % 5 == 0,
    )
    chunks = chunked(rollout, grid, grid, length)
    assert chunks.count == steps // length * envs
    for chunk in range(chunks.count):
        first, env = divmod(chunk, envs)
        rows = torch.arange(first * length, (first + 1) * length)
        assert torch.equal(chunks.actions[:, chunk], grid[rows, env].long())
        assert torch.equal(chunks.starts[:, chunk], rollout.starts[rows, env])
        assert chunks.states[chunk, 0] == grid[first * length, env]


def test_reward_scaling_is_the_continuous_presets_alone():
    assert resolved_settings(PPOConfig(name="ppo"), "Pendulum-v1").reward_norm is True
    assert resolved_settings(PPOConfig(name="ppo"), "CartPole-v1").reward_norm is False
    given = PPOConfig(name="ppo", reward_norm=False)
    assert resolved_settings(given, "Pendulum-v1").reward_norm is False


def test_ppo_with_scaled_rewards_resumes_its_scaler(compose, tmp_path):
    tiny = ["algo=ppo", "env=pendulum", "net.hidden_sizes=[16]", "algo.rollout_length=128"]
    tiny += ["algo.segment_steps=256", "algo.minibatches=4", "run.max_frames=1024"]
    left, _ = check_learner_resume(
        compose, [*tiny, "run.eval_episodes=1"], tmp_path, segments=3, stop_at=1
    )
    scaler = left["algorithm"]["learner"]["reward_scaler"]
    assert scaler["count"] > 700 and scaler["var"] != 1.0  # it moved, and came back the same
