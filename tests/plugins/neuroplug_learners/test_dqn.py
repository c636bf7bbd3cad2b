"""DQN: it solves CartPole with the shipped preset, resumes with its replay buffer,
counts Atari honestly, and checks its settings before any env starts."""

from __future__ import annotations

import csv
import math

import pytest
from neuroplug_learners.dqn import DQNConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import check_learner_resume, resolved_settings
from neuroplug.training.checkpoint import load_checkpoint

TINY = [
    "algo=dqn",
    "env=cartpole",
    "net.hidden_sizes=[16]",
    "algo.buffer_size=2000",
    "algo.batch_size=16",
    "algo.learning_starts=64",
    "algo.train_frequency=16",
    "algo.gradient_steps=4",
    "algo.target_update_interval=32",
    "algo.segment_steps=256",
    "algo.torch_threads=1",
    "run.max_frames=2048",
    "run.eval_episodes=2",
]


def test_dqn_resumes_with_its_replay_buffer(compose, tmp_path):
    left, _ = check_learner_resume(
        compose, [*TINY, "algo.checkpoint_replay=true"], tmp_path, segments=3, stop_at=1
    )
    assert left["algorithm"]["learner"]["updates"] > 0
    assert left["algorithm"]["learner"]["replay"]["size"] > 0


def test_dqn_without_the_buffer_in_its_checkpoint_says_it_refills(compose, tmp_path, capsys):
    run_job(compose([*TINY, "run.max_segments=1", f"run.output_dir={tmp_path}", "logger=none"]))
    capsys.readouterr()
    run_job(compose([*TINY, "run.max_segments=2", f"run.resume={tmp_path}", "logger=console"]))
    out = capsys.readouterr().out
    assert "dqn: resumed with an empty replay buffer" in out
    assert "refills for 64 steps" in out


def test_a_short_pong_run_counts_frames_and_scores_whole_games(compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=dqn",
                "env=pong",
                "env.max_episode_steps=200",
                "algo.num_envs=4",
                "algo.train_frequency=4",
                "algo.segment_steps=1024",
                "algo.buffer_size=2000",
                "algo.learning_starts=400",
                "algo.target_update_interval=200",
                "algo.n_step=3",
                "algo.double_q=true",
                "algo.reward_clip=true",
                "algo.episodic_life=true",
                "run.max_segments=1",
                "run.eval_episodes=1",
                "logger=console",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    state = load_checkpoint(tmp_path)
    counters, learner = state["counters"], state["algorithm"]["learner"]
    assert counters["frames"] == 4 * counters["env_steps"]
    # 256 steps per env: each env's 200-step game ends, and its reset step is not counted.
    assert counters["env_steps"] == summary["env_steps"] == 1024 - 4
    assert counters["episodes"] == 4
    # 64 rollouts of 4 steps x 4 envs; from the 25th on (400 stored) each ends in one
    # gradient step.
    assert learner["updates"] == 64 - 25 + 1
    # Games are scored whole and unclipped, in training and in evaluation.
    (metrics,) = csv.DictReader((tmp_path / "metrics.csv").open())
    assert -21 <= float(metrics["return_mean"]) <= 21
    assert (4 * float(metrics["return_mean"])).is_integer()
    assert -21 <= summary["eval_return_mean"] <= 21 and not math.isnan(summary["eval_return_mean"])
    assert math.isfinite(float(metrics["algo/loss"]))


def test_dqn_refuses_continuous_actions_before_any_env_starts(compose, tmp_path):
    with pytest.raises(ConfigError, match="discrete actions"):
        run_job(compose(["algo=dqn", "env=pendulum", f"run.output_dir={tmp_path}"]))


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"buffer_size": 16, "batch_size": 32}, "buffer_size"),
        ({"final_epsilon": 1.5}, "final_epsilon"),
        ({"final_epsilon": -0.1}, "final_epsilon"),
        ({"exploration_fraction": 2.0}, "exploration_fraction"),
        ({"train_frequency": 0}, "train_frequency"),
    ],
)
def test_bad_dqn_settings_name_the_field(settings, field):
    with pytest.raises(ConfigError, match=f"algo.{field}"):
        resolved_settings(DQNConfig(name="dqn", **settings))


@pytest.mark.parametrize("double_q", [True, False])
def test_the_written_out_step_computes_autograds_loss_and_gradient(double_q):
    import numpy as np
    import torch
    from neuroplug_learners.dqn import DQN, huber

    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context()
    config, _ = resolve(DQNConfig(name="dqn", double_q=double_q), context.env)
    learner = DQN(config, context)
    assert learner._written_out  # the 16-unit MLP
    generator = torch.Generator().manual_seed(0)
    size = 32
    batch = {
        "observations": torch.randn(size, 4, generator=generator),
        "next_observations": torch.randn(size, 4, generator=generator),
        "actions": torch.randint(0, 2, (size,), generator=generator),
        "rewards": torch.ones(size),
        "discounts": torch.full((size,), 0.97) * torch.from_numpy(np.arange(size) % 5 > 0),
    }
    learner.target = learner.q.detach() + 0.1 * torch.randn(learner.q.shape, generator=generator)
    batch["next_target"] = learner.model(batch["next_observations"], learner.target)
    learner._tensors = context.network.layout.split(learner.q.detach())
    learner.q.grad = None
    written = learner._written_out_step(batch)
    written_grad = learner.q.grad.clone()
    learner.q.grad = None
    expected = learner._autograd_step(batch)
    # The TD errors agree, and the logged Huber loss is smooth_l1_loss's.
    torch.testing.assert_close(written, expected, rtol=1e-5, atol=1e-6)
    loss = torch.nn.functional.smooth_l1_loss(written, torch.zeros_like(written))
    assert float(huber(written).mean()) == pytest.approx(float(loss), rel=1e-6)
    torch.testing.assert_close(written_grad, learner.q.grad, rtol=1e-4, atol=1e-6)
