"""Settings per kind of task: plain commands solve CartPole, Atari gets the papers' training
settings, the start-up line says which preset was used, and the command line wins."""

from __future__ import annotations

import pytest
from neuroplug_learners.ppo import PPOConfig

from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.plugin_configs.presets import resolve
from neuroplug.testing import resolved_settings


@pytest.mark.parametrize("learner", ["ppo", "appo", "dqn"])
def test_a_plain_command_solves_cartpole(compose, tmp_path, capsys, learner):
    overrides = [f"algo={learner}", "env=cartpole", "logger=console"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["eval_return_mean"] >= 475, summary
    assert "(algo settings: discrete preset: RL Zoo CartPole-v1" in capsys.readouterr().out


def test_atari_gets_the_papers_settings_and_the_command_line_wins():
    pong = make_spec(EnvConfig(task_id="Pong-v5"))
    settings, source = resolve(PPOConfig(name="ppo"), pong)
    assert source == "pixels preset: CleanRL ppo_atari_envpool.py"
    assert (settings.rollout_length, settings.epochs, settings.clip_coef) == (128, 4, 0.1)
    assert settings.reward_clip and settings.episodic_life
    given, source = resolve(PPOConfig(name="ppo", num_envs=64, reward_clip=False), pong)
    assert given.num_envs == 64 and not given.reward_clip and given.episodic_life
    # The start-up line says which of the preset's values the command replaced.
    assert source.endswith("ppo_atari_envpool.py; given: num_envs=64, reward_clip=False")


def test_continuous_tasks_get_the_mujoco_settings_without_atari_ones():
    settings = resolved_settings(PPOConfig(name="ppo"), "Pendulum-v1")
    assert (settings.num_envs, settings.rollout_length, settings.minibatches) == (1, 2048, 32)
    assert not settings.reward_clip and not settings.episodic_life


def test_an_atari_setting_on_another_task_names_the_field():
    with pytest.raises(ConfigError, match="algo.episodic_life"):
        resolved_settings(PPOConfig(name="ppo", episodic_life=True))


def test_a_learner_without_a_preset_for_the_task_names_only_its_own_fields():
    from dataclasses import dataclass

    @dataclass
    class DiscreteOnly(PPOConfig):
        @classmethod
        def presets(cls):
            return {
                kind: preset for kind, preset in super().presets().items() if kind != "continuous"
            }

    with pytest.raises(ConfigError, match="has no 'continuous' entry") as raised:
        resolve(DiscreteOnly(name="discrete_only"), make_spec(EnvConfig(task_id="Pendulum-v1")))
    message = str(raised.value)
    assert "algo.learning_rate" in message and "algo.rollout_length" in message
    # The base class's settings have values for every kind: not the user's to give.
    assert "algo.num_envs" not in message and "algo.segment_steps" not in message
