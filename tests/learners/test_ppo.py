"""PPO end to end: it solves CartPole, resumes bit-identically, and counts Atari honestly."""

from __future__ import annotations

import math

import pytest
from neuroplug_learners.ppo import PPOConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.replay import replay
from neuroplug.testing import check_resume_is_exact
from neuroplug.training.checkpoint import load_checkpoint

# RL Zoo's CartPole-v1 PPO settings on a 64-64 MLP: the shipped preset.
CARTPOLE = ["+experiment=ppo_cartpole"]


def test_ppo_solves_cartpole(compose, tmp_path):
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
    replayed = replay(tmp_path, video=False)
    assert replayed.returns.mean() == pytest.approx(summary["eval_return_mean"])


def test_ppo_resumes_bit_identically(compose, tmp_path):
    tiny = [*CARTPOLE, "algo.segment_steps=512", "run.max_frames=4096", "run.eval_episodes=2"]
    left, right = check_resume_is_exact(compose, tiny, tmp_path, generations=3, stop_at=1)
    assert left["counters"]["env_steps"] > 0


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
                "run.max_generations=1",
                "run.eval_episodes=1",
                "logger=csv",
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
    ("field", "value"), [("epochs", 0), ("clip_coef", 0.0), ("gae_lambda", -0.1), ("num_envs", 0)]
)
def test_bad_ppo_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"algo.{field}"):
        PPOConfig(**{field: value})


def test_continuous_actions_train_a_gaussian_policy(compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=ppo",
                "env=pendulum",
                "net.hidden_sizes=[16]",
                "algo.num_envs=4",
                "algo.rollout_length=64",
                "algo.segment_steps=512",
                "run.max_generations=2",
                "run.eval_episodes=1",
                "logger=none",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    state = load_checkpoint(tmp_path)
    # 128 steps per env and segment: no 200-step Pendulum episode ends, none is left out.
    assert summary["env_steps"] == 1024
    assert "log_std" in state["algorithm"]["model"]  # the learned std of the Gaussian
    assert math.isfinite(summary["eval_return_mean"])
