"""Networks are plugins: registered by entry point (neuroplug's own too), chosen by
net.type, their own settings under net.kwargs checked by their config class."""

from __future__ import annotations

import sys

import pytest
from fake_distribution import install_distribution

from neuroplug import registry
from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.experiment.network_choice import network_names

TINY_NET = '''
from dataclasses import dataclass

from neuroplug.config.schema import CheckedConfig
from neuroplug.errors import require
from neuroplug.nets.mlp import MLP


@dataclass
class TinySettings(CheckedConfig):
    """net.kwargs of net.type=tiny."""

    width: int = 4

    def check(self):
        super().check()
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
        (["net.type=tinyy"], "net.type", r"allowed: auto, .*mlp, .*tiny"),
        (["net.type=mlp", "net.kwargs.width=3"], "net.kwargs.width", "no settings of its own"),
    ],
)
def test_bad_network_settings_fail_before_training_naming_the_field(
    tiny_network, compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*TINY_RUN, *overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field


ELMAN_CORE = '''
from neuroplug.nets.core import RecurrentCore
from neuroplug.nets.layers import ACTIVATIONS


class ElmanCore(RecurrentCore):
    """Elman's simple recurrent cell: h' = tanh(x W + b + h U + c), one gate block."""

    gates = 1

    def update(self, input_gates, state, state_gates):
        new_state = ACTIVATIONS["tanh"](input_gates + state_gates(state))
        return new_state, new_state
'''


@pytest.fixture
def elman_core(tmp_path, monkeypatch):
    """An installed distribution that adds net.core=elman."""
    install_distribution(
        tmp_path,
        "neuroplug-elman-core",
        {"neuroplug.cores": {"elman": "neuroplug_elman_core:ElmanCore"}},
        {"neuroplug_elman_core.py": ELMAN_CORE},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("neuroplug_elman_core", None)


def test_the_built_in_cores_are_registered_as_a_package_registers_one():
    infos = [info for info in registry.describe_all() if info.kind == "cores"]
    assert {(info.name, info.distribution) for info in infos} >= {
        ("gru", "neuroplug"),
        ("lstm", "neuroplug"),
    }


def test_a_packages_core_runs_in_the_layer_table_as_torch_runs_that_cell(elman_core):
    import torch

    from neuroplug.nets.mlp import MLP
    from neuroplug.testing import check_network_contract

    network = MLP(4, [16], 3, "tanh", core="elman", core_size=8)
    check_network_contract(network)
    assert network.state_size == 8 and "ELMAN8" in network.describe()
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(3)])
    inputs, state = torch.randn(3, 4), torch.randn(3, 8)
    outputs, new_state = network.forward_population_with_state(params, inputs, state)
    for member in range(3):
        tensor = lambda name: network.layout.tensor(params[member], name)  # noqa: E731, B023
        cell = torch.nn.RNNCell(16, 8, nonlinearity="tanh")
        with torch.no_grad():
            cell.weight_ih.copy_(tensor("core.w").T)
            cell.bias_ih.copy_(tensor("core.b"))
            cell.weight_hh.copy_(tensor("core.u").T)
            cell.bias_hh.copy_(tensor("core.c"))
            features = torch.tanh(inputs[member : member + 1] @ tensor("w0") + tensor("b0"))
            expected_state = cell(features, state[member : member + 1])
        torch.testing.assert_close(new_state[member], expected_state[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(
            outputs[member], (expected_state @ tensor("w1") + tensor("b1"))[0], rtol=1e-5, atol=1e-6
        )


def test_a_packages_core_is_a_net_core_that_learners_and_evolution_run(
    elman_core, compose, tmp_path
):
    for algo in ("ppo", "es"):
        settings = ["algo.population_size=4", "run.max_generations=1"] if algo == "es" else []
        summary = run_job(
            compose(
                [
                    f"algo={algo}",
                    "env=cartpole",
                    *settings,
                    "run.max_frames=2048",
                    "net.core=elman",
                    "net.core_size=8",
                    "logger=none",
                    "run.eval_episodes=1",
                    f"run.output_dir={tmp_path / algo}",
                ]
            )
        )
        assert summary["frames"] > 0
    with pytest.raises(ConfigError, match="none, elman, gru, lstm") as raised:
        run_job(
            compose([*TINY_RUN, "net.core=elmann", "logger=none", f"run.output_dir={tmp_path}"])
        )
    assert raised.value.field == "net.core"
