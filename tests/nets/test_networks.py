"""Batched forward of many members equals a naive per-member loop, for every network."""

from __future__ import annotations

import pytest
import torch

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN

# Bit-equality across batches and companies: the outcome rests on the kernels the
# libraries pick (scripts/test_kernels.sh runs it again under a narrower instruction set).
pytestmark = pytest.mark.kernels


def _naive(network, params, inputs):
    """One member at a time: the reference the batched forward must match."""
    return torch.cat(
        [network.forward_single(params[i], inputs[i : i + 1]) for i in range(len(params))]
    )


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_mlp_batched_forward_matches_per_member_loop(activation):
    network = MLP(5, [16, 8], 3, activation)
    params = torch.randn(6, network.num_params)
    inputs = torch.randn(6, 5)
    assert torch.allclose(
        network.forward_population(params, inputs), _naive(network, params, inputs), atol=1e-5
    )


@pytest.mark.parametrize(
    ("padding", "expected_params"), [("valid", 1_686_180), ("same", 4_045_476)]
)
def test_nature_cnn_parameter_counts(padding, expected_params):
    # VALID: 84->20->9->7 (3136 into the fc layer); SAME: 84->21->11->11 (7744), the deep GA's "large" net.
    assert NatureCNN((4, 84, 84), 4, padding).num_params == expected_params


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_nature_cnn_batched_forward_matches_per_member_loop(padding):
    network = NatureCNN((2, 36, 36), 3, padding)
    params = network.initial_params(torch.Generator().manual_seed(0)).repeat(3, 1)
    params += 0.05 * torch.randn_like(params)
    inputs = torch.randint(0, 256, (3, 2, 36, 36), dtype=torch.uint8)
    batched = network.forward_population(params, inputs)
    assert batched.shape == (3, 3)
    assert torch.allclose(batched, _naive(network, params, inputs), atol=1e-4)


def test_nature_cnn_matches_torch_layers():
    """The grouped-convolution math is the ordinary Nature CNN, checked against nn layers."""
    network = NatureCNN((4, 84, 84), 6)
    params = network.initial_params(torch.Generator().manual_seed(1))
    single = params.unsqueeze(0)
    layers = []
    channels = 4
    for index, (out_channels, kernel, stride) in enumerate(((32, 8, 4), (64, 4, 2), (64, 3, 1))):
        conv = torch.nn.Conv2d(channels, out_channels, kernel, stride)
        conv.weight.data = network.layout.view(single, f"conv{index}.w")[0]
        conv.bias.data = network.layout.view(single, f"conv{index}.b")[0]
        layers += [conv, torch.nn.ReLU()]
        channels = out_channels
    fc = torch.nn.Linear(3136, 512)
    fc.weight.data = network.layout.view(single, "fc.w")[0].T
    fc.bias.data = network.layout.view(single, "fc.b")[0]
    out = torch.nn.Linear(512, 6)
    out.weight.data = network.layout.view(single, "out.w")[0].T
    out.bias.data = network.layout.view(single, "out.b")[0]
    model = torch.nn.Sequential(*layers, torch.nn.Flatten(), fc, torch.nn.ReLU(), out)
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    with torch.no_grad():
        expected = model(frames.float() / 255.0)
    assert torch.allclose(network.forward_single(params, frames), expected, atol=1e-4)


def test_initialisation_is_seeded():
    network = MLP(4, [8], 2, "tanh")
    first = network.initial_params(torch.Generator().manual_seed(3))
    assert torch.equal(first, network.initial_params(torch.Generator().manual_seed(3)))
    assert not torch.equal(first, network.initial_params(torch.Generator().manual_seed(4)))


@pytest.mark.parametrize("network", [MLP(4, [8, 8], 3, "tanh"), NatureCNN((2, 36, 36), 3, "valid")])
def test_split_parameters_run_the_network_exactly_as_the_flat_vector(network):
    params = torch.randn(network.num_params, generator=torch.Generator().manual_seed(0))
    tensors = network.layout.split(params)
    assert list(tensors) == list(network.layout.slots)
    inputs = torch.rand(3, *network.input_shape, generator=torch.Generator().manual_seed(1))
    assert torch.equal(
        network.forward_single(tensors, inputs), network.forward_single(params, inputs)
    )
    assert torch.equal(network.layout.join(tensors), params)


@pytest.mark.parametrize(
    "network",
    [MLP(5, [16, 8], 3, "elu"), NatureCNN((2, 36, 36), 4, "same")],
    ids=["mlp", "nature_cnn_same"],
)
def test_the_shipped_networks_honour_the_network_contract(network):
    from neuroplug.testing import check_network_contract

    check_network_contract(network)


@pytest.mark.parametrize("activation", ["tanh", "relu", "elu", "sigmoid", "identity"])
def test_networks_pickle_with_every_activation(activation):
    # Ray ships the network to its workers; a lambda in the layer table would not travel.
    import pickle

    network = MLP(5, [16], 3, activation)
    copy = pickle.loads(pickle.dumps(network))
    params = network.initial_params(torch.Generator().manual_seed(0))
    inputs = torch.randn(2, 5)
    assert torch.equal(copy.forward_single(params, inputs), network.forward_single(params, inputs))


def test_the_two_initializations_start_the_linear_layers_as_they_say():
    normc = MLP(11, [64, 32], 3, "relu", init="normc")
    uniform = MLP(11, [64, 32], 3, "relu", init="uniform")
    normc_tensors = normc.layout.split(normc.initial_params(torch.Generator().manual_seed(0)))
    uniform_tensors = uniform.layout.split(uniform.initial_params(torch.Generator().manual_seed(0)))
    for layer, (fan_in, norm) in enumerate([(11, 1.0), (64, 1.0), (32, 0.01)]):
        unit_norms = normc_tensors[f"w{layer}"].norm(dim=0)
        torch.testing.assert_close(unit_norms, torch.full_like(unit_norms, norm))
        assert not normc_tensors[f"b{layer}"].any()
        bound = fan_in**-0.5
        for name in (f"w{layer}", f"b{layer}"):
            values = uniform_tensors[name]
            assert values.abs().max() <= bound
            # Spread over the interval as nn.Linear's are, not bunched near zero.
            assert values.abs().max() > 0.5 * bound and values.std() > 0.3 * bound
    assert uniform.resized(5).init == "uniform"
