"""``net.activation: null``: the run's algorithm names its reference implementation's
hidden activation (ReLU for td3 and sac, as CleanRL's scripts; tanh for the rest), and the
run's record says which one the network was built with."""

from __future__ import annotations

import pytest

from neuroplug.errors import ConfigError
from neuroplug.experiment.typed import typed_experiment
from neuroplug.training.components import build_components


@pytest.mark.parametrize(
    ("overrides", "activation"),
    [
        (["algo=td3", "env=pendulum"], "relu"),
        (["algo=sac", "env=pendulum"], "relu"),
        (["algo=td3", "env=pendulum", "net.activation=tanh"], "tanh"),
        (["algo=ppo", "env=pendulum"], "tanh"),
        (["algo=es", "env=pendulum"], "tanh"),
        (["algo=pbt", "algo.learner=td3", "env=pendulum", "algo.members=2"], "relu"),
        (["algo=pbt", "algo.learner=ppo", "env=cartpole", "algo.members=2"], "tanh"),
    ],
)
def test_the_algorithm_decides_an_unset_activation(compose, overrides, activation):
    parts = build_components(typed_experiment(compose(overrides)))
    assert parts.config.net.activation == activation
    assert parts.network.activation_name == activation
    assert f"activation: {activation}" in parts.config.to_yaml()


def test_an_unknown_activation_names_the_choices(compose):
    with pytest.raises(ConfigError, match=r"net\.activation.*null \(the algorithm's\), tanh"):
        typed_experiment(compose(["net.activation=swish"]))


@pytest.mark.parametrize(
    ("overrides", "init"),
    [
        (["algo=sac", "env=pendulum"], "uniform"),
        (["algo=td3", "env=pendulum"], "normc"),
        (["algo=sac", "env=pendulum", "net.init=normc"], "normc"),
        (["algo=es", "env=pendulum"], "normc"),
        (["algo=ppo", "env=pendulum"], "normc"),
        (["algo=pbt", "algo.learner=sac", "env=pendulum", "algo.members=2"], "uniform"),
    ],
)
def test_the_algorithm_decides_an_unset_initialization(compose, overrides, init):
    parts = build_components(typed_experiment(compose(overrides)))
    assert parts.config.net.init == parts.network.init == init
    assert f"init: {init}" in parts.config.to_yaml()
