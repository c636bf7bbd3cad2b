"""The learners' settings: checked before the run's task is known where they can be."""

from __future__ import annotations

import pytest
from neuroplug_learners.dqn_config import DQNConfig
from neuroplug_learners.ppo_config import PPOConfig

from neuroplug.errors import ConfigError


def test_a_value_no_task_accepts_is_refused_before_the_preset_is_chosen():
    with pytest.raises(ConfigError, match="algo.learning_rate: got -0.1"):
        PPOConfig(learning_rate=-0.1)
    with pytest.raises(ConfigError, match="algo.gamma"):
        DQNConfig(gamma=1.5)


def test_a_value_only_some_tasks_refuse_waits_for_the_preset():
    # 300 minibatches fit Atari's 8 x 128 transitions, not CartPole's 8 x 32.
    config = PPOConfig(minibatches=300)
    assert config.minibatches == 300 and config.rollout_length is None
