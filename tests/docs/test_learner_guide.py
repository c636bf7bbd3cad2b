"""The learner guide's example (docs/plugins.md, "Write your own learner") is real, working code:
it honours the learner contract and learns CartPole."""

from __future__ import annotations

import numpy as np
import pytest
from readme_code import readme_module

from neuroplug.errors import ConfigError
from neuroplug.testing import (
    check_learner_contract,
    check_population_member,
    learner_context,
    resolved_settings,
)


def _readme_learner():
    """The guide's example (docs/plugins.md), executed as a module of its own."""
    return readme_module("class A2C(", "readme_a2c")


def test_the_readme_learner_honours_the_contract():
    check_learner_contract(_readme_learner().A2C)


def test_the_readme_learner_learns_cartpole():
    a2c = _readme_learner()
    config = resolved_settings(a2c.A2CConfig(name="a2c", segment_steps=5000))
    learner = a2c.A2C(config, learner_context(seed=0, max_env_steps=40_000))
    try:
        means = [float(np.mean(learner.train_segment().returns)) for _ in range(8)]
    finally:
        learner.close()
    # A random CartPole policy lasts ~22 steps; the learned one many times longer.
    assert means[0] < 60 and max(means[-3:]) > 200, means


def test_the_readme_learner_is_a_population_member(monkeypatch):
    check_population_member(_readme_learner().A2C)
    # algo=pbt algo.learner=a2c, as after `pip install` of the README's package: a learner
    # that declares what may mutate and how it learns from one rollout.
    import neuroplug_learners.pbt as pbt
    import neuroplug_learners.pbt_config as pbt_settings

    a2c = _readme_learner()
    for module in (pbt, pbt_settings):  # the population and its settings' check
        monkeypatch.setattr(module, "learner_class", lambda name: a2c.A2C)
    config = pbt.PBTConfig(
        name="pbt",
        learner="a2c",
        members=2,
        member={"segment_steps": 256},
        interval_frames=64,
        mutation_probability=1.0,
        reference_member=False,
    )
    context = learner_context(seed=0, max_env_steps=2048)
    population = pbt.PBT(resolved_settings(config), context)
    try:
        before = [member.config.learning_rate for member in population.members]
        segment = population.train_segment()
    finally:
        population.close()
    assert segment.env_steps > 0 and population.rounds >= 1
    assert [member.config.learning_rate for member in population.members] != before


def _readme_ddpg():
    """The guide's off-policy example (docs/plugins.md), executed as a module of its own."""
    return readme_module("class DDPG(", "readme_ddpg")


def test_the_off_policy_example_honours_the_contract_on_pendulum():
    ddpg = _readme_ddpg()
    # Learning starts within the check's two segments of 256 steps, so the policy changes.
    config = ddpg.DDPGConfig(name="ddpg", learning_starts=64, batch_size=32)
    check_learner_contract(ddpg.DDPG, config=config, task="Pendulum-v1")


def test_the_off_policy_example_is_refused_on_discrete_actions():
    ddpg = _readme_ddpg()
    with pytest.raises(ConfigError, match="discrete"):
        check_learner_contract(ddpg.DDPG, task="CartPole-v1")
