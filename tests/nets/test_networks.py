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


def _measuring_env():
    """A task seeing 36 x 36 grey frames and 3 numbers below them."""
    import numpy as np

    from neuroplug.envs.families import family_named
    from neuroplug.envs.measurements import MeasurementLayout
    from neuroplug.envs.spec import EnvSpec

    layout = MeasurementLayout("screen", (1, 36, 36), (("gauge", 3),), (0.0,) * 3, (1.0,) * 3)
    return EnvSpec(
        task_id="gauges", family=family_named("multi_agent"), obs_shape=layout.shape,
        obs_dtype=np.uint8, discrete=True, num_actions=2, action_low=None, action_high=None,
        frame_skip=1, max_episode_steps=5, solved_return=None, measurement_layout=layout,
    )  # fmt: skip


def test_measurements_join_the_first_linear_layer_and_only_their_bytes_count():
    """A frame of 36 rows and its 3 measurements in a 37th: the convolutions see the
    pixels, the 512 units the measurements too; every forward gives one member's outputs."""
    from neuroplug.deploy.policy_module import network_module
    from neuroplug.nets.layers import forward_members, forward_single

    network = NatureCNN((1, 37, 36), 2, core="gru", core_size=16, measurements=3)
    assert network.layout.slots["fc.w"].shape == (64 + 3, 512)  # 64 conv features, then 3
    from neuroplug.testing import check_network_contract

    check_network_contract(network)
    generator = torch.Generator().manual_seed(1)
    params = torch.stack([network.initial_params(generator) for _ in range(3)])
    inputs = network.example_inputs(6, generator).reshape(3, 2, 1, 37, 36)
    outputs = forward_members(network.layers, network.layout, params, inputs)
    for member in range(3):
        alone = forward_single(network.layers, network.layout, params[member], inputs[member])
        torch.testing.assert_close(alone, outputs[member], rtol=1e-5, atol=1e-6)
        deployed, _ = network_module(network, params[member])(inputs[member])
        torch.testing.assert_close(deployed, outputs[member], rtol=1e-5, atol=1e-6)

    def changed(row: int, column: int) -> bool:
        edited = inputs.clone()
        edited[..., 0, row, column] ^= 255
        return not torch.equal(
            forward_members(network.layers, network.layout, params, edited), outputs
        )

    assert changed(36, 2) and changed(10, 10)  # a measurement, a pixel
    assert not changed(36, 3)  # after the last measurement: padding, read by no layer


def test_a_network_that_would_read_measurements_as_pixels_is_refused_naming_the_field():
    from neuroplug.config.schema import NetConfig
    from neuroplug.errors import ConfigError
    from neuroplug.experiment.network_choice import build_network

    env = _measuring_env()
    assert build_network(NetConfig(), env).measurements == 3  # auto: the Nature CNN
    with pytest.raises(ConfigError, match="net.type: .*3 measurements.*impala would read"):
        build_network(NetConfig(type="impala"), env)
    with pytest.raises(ConfigError, match="net.vbn: .*measurements"):
        build_network(NetConfig(vbn=True), env)
