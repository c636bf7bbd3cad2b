"""DQN: exact resume with the replay buffer in the checkpoint, and settings checked early."""

from __future__ import annotations

import pytest
from neuroplug_learners.dqn import DQNConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import check_resume_is_exact

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


def test_dqn_resumes_bit_identically_with_its_replay_buffer(compose, tmp_path):
    left, _ = check_resume_is_exact(
        compose, [*TINY, "algo.checkpoint_replay=true"], tmp_path, generations=3, stop_at=1
    )
    assert left["algorithm"]["learner"]["updates"] > 0
    assert left["algorithm"]["learner"]["replay"]["size"] > 0


def test_dqn_without_the_buffer_in_its_checkpoint_says_it_refills(compose, tmp_path, capsys):
    run_job(compose([*TINY, "run.max_generations=1", f"run.output_dir={tmp_path}", "logger=none"]))
    run_job(compose([*TINY, "run.max_generations=2", f"run.resume={tmp_path}", "logger=none"]))
    assert "empty replay buffer" in capsys.readouterr().out


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
        DQNConfig(**settings)
