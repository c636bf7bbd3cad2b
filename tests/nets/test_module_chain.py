"""A module of linear layers and activations runs as batched products over members
(neuroplug.nets.module_chain), agreeing with the general functional_call path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from residual_net import PlainMLP, RecurrentEncoder, ResidualMLP
from torch import nn

from neuroplug.nets.module_chain import linear_chain
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.testing import check_network_contract


class CallStyle(nn.Module):
    """Activations written as calls, a bias-free layer."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 5, bias=False)
        self.second = nn.Linear(5, 2)

    def forward(self, x):
        return self.second(F.relu(self.first(x)).tanh())


class Skips(nn.Module):
    """A skip connection: not a chain."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 3)

    def forward(self, x):
        return x + self.first(x)


def test_chains_are_recognised_and_anything_else_is_left_to_the_general_path():
    chain = linear_chain(PlainMLP((4,), 2))
    assert [layer.weight for layer in chain] == [f"layers.{i}.weight" for i in (0, 2, 4)]
    assert [len(layer.activations) for layer in chain] == [1, 1, 0]
    call_style = linear_chain(CallStyle())
    assert call_style[0].bias is None and len(call_style[0].activations) == 2
    assert linear_chain(Skips()) is None
    assert linear_chain(ResidualMLP((4,), 2, width=8)) is None  # LayerNorm and residuals
    assert linear_chain(nn.Sequential(nn.Tanh(), nn.Linear(3, 2))) is None
    assert linear_chain(nn.Sequential(nn.Linear(3, 2), nn.LeakyReLU(0.2))) is None  # a setting


def _general(network: ModuleNetwork) -> ModuleNetwork:
    """The same network on the functional_call path."""
    general = ModuleNetwork(
        network.module_class, network.input_shape, network.output_size, network.kwargs,
        features=network.encoder_features, lower_chains=False,
    )  # fmt: skip
    assert general.chain is None and general.resized(1).chain is None
    return general


@pytest.mark.parametrize("features", [0, 6])
def test_a_chain_computes_what_functional_call_computes(features):
    network = ModuleNetwork(PlainMLP, (4,), 3, {"width": 8}, features=features)
    assert network.chain and "linear layers batched" in network.describe()
    general = _general(network)
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(5)])
    inputs = torch.randn(5, 4, generator=generator)
    torch.testing.assert_close(
        network.forward_population(params, inputs), general.forward_population(params, inputs)
    )
    batches = torch.randn(5, 7, 4, generator=generator)
    torch.testing.assert_close(
        network.forward_members(params, batches), general.forward_members(params, batches)
    )
    torch.testing.assert_close(
        network.forward_single(params[2], batches[0]), general.forward_single(params[2], batches[0])
    )
    if features:
        features_of = network.features_members_with_state(params, batches, None)[0]
        torch.testing.assert_close(
            features_of, general.features_members_with_state(params, batches, None)[0]
        )
        torch.testing.assert_close(
            network.features(params[1], batches[1]), general.features(params[1], batches[1])
        )
    # A member's outputs do not depend on its company.
    alone = network.forward_population(params[3:4], inputs[3:4])
    assert torch.equal(alone[0], network.forward_population(params, inputs)[3])
    check_network_contract(network)


def test_frames_and_recurrent_modules_keep_the_general_path():
    assert ModuleNetwork(PlainMLP, (4, 2), 3).chain is None  # a linear layer on frames' last axis
    assert ModuleNetwork(RecurrentEncoder, (4,), 2, {"width": 8}, features=5).chain is None


def test_a_chain_trains_the_flat_parameters_with_functional_calls_gradients():
    network = ModuleNetwork(PlainMLP, (4,), 3, {"width": 8})
    inputs = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    gradients = []
    for path in (network, _general(network)):
        params = network.initial_params(torch.Generator().manual_seed(0)).requires_grad_()
        path.forward_single(params, inputs).square().sum().backward()
        gradients.append(params.grad)
    assert gradients[0].abs().sum() > 0
    torch.testing.assert_close(gradients[0], gradients[1])
