"""Networks are plugins: registered by entry point (neuroplug's own too), chosen by
net.type, their own settings under net.kwargs checked by their config class."""

from __future__ import annotations

import sys

import pytest
from fake_distribution import install_distribution

from neuroplug import registry
from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.networks import network_names

TINY_NET = '''
from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.nets.mlp import MLP


@dataclass
class TinySettings:
    """net.kwargs of net.type=tiny."""

    width: int = 4

    def __post_init__(self):
        require(self.width >= 1, "net.kwargs.width", f"got {self.width}", "an integer >= 1")


class Tiny(MLP):
    """An MLP of one hidden layer of net.kwargs.width units."""

    config_class = TinySettings

    @classmethod
    def from_config(cls, config, env):
        return cls(env.obs_shape[0], [config.kwargs["width"]], env.num_actions, "tanh")
'''


@pytest.fixture
def tiny_network(tmp_path, monkeypatch):
    """An installed distribution that adds net.type=tiny (and its config entry point)."""
    install_distribution(
        tmp_path,
        "neuroplug-tiny-net",
        {
            "neuroplug.networks": {"tiny": "neuroplug_tiny_net:Tiny"},
            "neuroplug.network_configs": {"tiny": "neuroplug_tiny_net:TinySettings"},
        },
        {"neuroplug_tiny_net.py": TINY_NET},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("neuroplug_tiny_net", None)


TINY_RUN = ["algo=es", "env=cartpole", "algo.population_size=4", "run.max_generations=1"]


def test_the_built_in_networks_are_registered_as_a_package_registers_one():
    infos = [info for info in registry.describe_all() if info.kind == "networks"]
    assert {(info.name, info.distribution) for info in infos} >= {
        ("mlp", "neuroplug"),
        ("nature_cnn", "neuroplug"),
    }


def test_a_packages_network_is_a_net_type_with_its_own_settings(tiny_network, compose, tmp_path):
    assert "tiny" in network_names()
    summary = run_job(
        compose(
            [
                *TINY_RUN,
                "net.type=tiny",
                "net.kwargs.width=3",  # no "+": the network's config class checks it
                "logger=none",
                "run.eval_episodes=1",
                f"run.output_dir={tmp_path / 'run'}",
            ]
        )
    )
    assert summary["frames"] > 0
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert "type: tiny" in config and "width: 3" in config


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["net.type=tiny", "net.kwargs.width=0"], "net.kwargs.width", "got 0"),
        (["net.type=tiny", "net.kwargs.depth=2"], "net.kwargs.depth", "width"),
        (["net.type=tinyy"], "net.type", "auto, impala, mlp, module, nature_cnn, tiny"),
        (["net.type=mlp", "net.kwargs.width=3"], "net.kwargs.width", "no settings of its own"),
    ],
)
def test_bad_network_settings_fail_before_training_naming_the_field(
    tiny_network, compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*TINY_RUN, *overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
