"""Every first-party learner honours the learner contract (neuroplug.testing)."""

from __future__ import annotations

import pytest
from neuroplug_learners.appo import APPO
from neuroplug_learners.dqn import DQN, DQNConfig
from neuroplug_learners.ppo import PPO

from neuroplug.testing import check_learner_contract


@pytest.mark.parametrize("learner", [PPO, APPO], ids=["ppo", "appo"])
def test_actor_critic_learners_honour_the_contract(learner):
    check_learner_contract(learner, deterministic=learner is not APPO)


def test_dqn_honours_the_contract():
    # Learning from the 64th step on, so two short segments change the policy.
    check_learner_contract(DQN, DQNConfig(name="dqn", learning_starts=64, batch_size=16))
