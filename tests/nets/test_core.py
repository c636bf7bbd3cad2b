"""The recurrent core (net.core=gru): PyTorch's GRU arithmetic, each member with its own
weights and state in one batched forward, in the layer table like any other layer."""

from __future__ import annotations

import pytest
import torch

from neuroplug.config.schema import NetConfig
from neuroplug.errors import ConfigError
from neuroplug.nets.layers import GRU, forward_single_with_state
from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN


def _population(network, members: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    return torch.stack([network.initial_params(generator) for _ in range(members)])


def _reference_step(network: MLP, params: torch.Tensor, inputs, state):
    """One member's step with torch.nn.GRUCell on the MLP's encoder output."""
    tensor = lambda name: network.layout.tensor(params, name)  # noqa: E731
    cell = torch.nn.GRUCell(tensor("core.w").shape[0], network.core_size)
    with torch.no_grad():
        cell.weight_ih.copy_(tensor("core.w").T)
        cell.bias_ih.copy_(tensor("core.b"))
        cell.weight_hh.copy_(tensor("core.u").T)
        cell.bias_hh.copy_(tensor("core.c"))
        features = torch.tanh(inputs @ tensor("w0") + tensor("b0"))
        new_state = cell(features, state)
        return new_state @ tensor("w1") + tensor("b1"), new_state


def test_each_member_steps_its_own_gru_as_torch_does():
    network = MLP(4, [16], 3, "tanh", core="gru", core_size=8)
    params = _population(network, 5)
    inputs, state = torch.randn(5, 4), torch.randn(5, 8)
    outputs, new_state = network.forward_population_with_state(params, inputs, state)
    for member in range(5):
        expected, expected_state = _reference_step(
            network, params[member], inputs[member : member + 1], state[member : member + 1]
        )
        torch.testing.assert_close(new_state[member], expected_state[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(outputs[member], expected[0], rtol=1e-5, atol=1e-6)


@pytest.mark.kernels
def test_a_members_step_does_not_depend_on_its_companions():
    network = MLP(4, [16], 3, "tanh", core="gru", core_size=8)
    params = _population(network, 6)
    inputs, state = torch.randn(6, 4), torch.randn(6, 8)
    outputs, new_state = network.forward_population_with_state(params, inputs, state)
    others = params.clone()
    others[3:] = _population(network, 3)
    other_outputs, other_state = network.forward_population_with_state(others, inputs, state)
    assert torch.equal(other_outputs[2], outputs[2]) and torch.equal(other_state[2], new_state[2])
    alone, alone_state = network.forward_population_with_state(params[2:3], inputs[2:3], state[2:3])
    torch.testing.assert_close(alone[0], outputs[2], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(alone_state[0], new_state[2], atol=1e-6, rtol=1e-5)


def test_the_single_forward_learners_train_through_agrees_with_the_population():
    network = MLP(4, [16], 3, "tanh", core="gru", core_size=8)
    params = _population(network, 1)[0]
    inputs, state = torch.randn(7, 4), torch.randn(7, 8)
    outputs, new_state = forward_single_with_state(
        network.layers, network.layout, params, inputs, state
    )
    batched, batched_state = network.forward_population_with_state(
        params.expand(7, -1), inputs, state
    )
    torch.testing.assert_close(outputs, batched, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(new_state, batched_state, rtol=1e-5, atol=1e-6)


def test_without_a_state_the_core_starts_from_zeros():
    network = MLP(4, [16], 3, "tanh", core="gru")
    params = _population(network, 3)
    inputs = torch.randn(3, 4)
    zeros = torch.zeros(3, network.state_size)
    expected, _ = network.forward_population_with_state(params, inputs, zeros)
    assert torch.equal(network.forward_population(params, inputs), expected)


@pytest.mark.parametrize(
    "network",
    [MLP(4, [16, 16], 3, "tanh", core="gru"), NatureCNN((2, 36, 36), 4, core="gru", core_size=32)],
)
def test_the_layer_table_describes_the_core_between_encoder_and_output(network):
    kinds = [layer.kind for layer in network.layers]
    assert kinds.count(GRU) == 1 and kinds[-2] == GRU and kinds[-1] == "linear"
    assert network.state_size == (16 if isinstance(network, MLP) else 32)
    assert "GRU" in network.describe()
    resized = network.resized(1)  # a critic keeps the core
    assert resized.state_size == network.state_size and resized.output_size == 1


def test_an_unknown_core_is_refused_naming_the_field():
    from neuroplug.config.schema import EnvConfig
    from neuroplug.envs.make import make_spec

    env = make_spec(EnvConfig(task_id="CartPole-v1"))
    with pytest.raises(ConfigError, match="net.core: got 'lstmm'"):
        MLP.from_config(NetConfig(core="lstmm"), env)


def test_each_member_steps_its_own_lstm_as_torch_does():
    network = MLP(4, [16], 3, "tanh", core="lstm", core_size=8)
    assert network.state_size == 16  # h and c side by side
    params = _population(network, 4)
    inputs, state = torch.randn(4, 4), torch.randn(4, 16)
    outputs, new_state = network.forward_population_with_state(params, inputs, state)
    for member in range(4):
        tensor = lambda name: network.layout.tensor(params[member], name)  # noqa: E731, B023
        cell = torch.nn.LSTMCell(16, 8)
        with torch.no_grad():
            cell.weight_ih.copy_(tensor("core.w").T)
            cell.bias_ih.copy_(tensor("core.b"))
            cell.weight_hh.copy_(tensor("core.u").T)
            cell.bias_hh.copy_(tensor("core.c"))
            features = torch.tanh(inputs[member : member + 1] @ tensor("w0") + tensor("b0"))
            h, c = cell(features, (state[member : member + 1, :8], state[member : member + 1, 8:]))
            expected = h @ tensor("w1") + tensor("b1")
        torch.testing.assert_close(new_state[member], torch.cat((h, c), 1)[0], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(outputs[member], expected[0], rtol=1e-5, atol=1e-6)
    alone, alone_state = network.forward_population_with_state(params[1:2], inputs[1:2], state[1:2])
    assert torch.equal(alone[0], outputs[1]) and torch.equal(alone_state[0], new_state[1])


@pytest.mark.parametrize("core", ["gru", "lstm"])
def test_a_learners_pass_over_a_sequence_is_the_step_by_step_core_and_its_gradients(core):
    """core_sequence (the input gates in one product; the backward written out through
    time) gives the core's step-by-step outputs on the same gates, and autograd's gradients
    of every input, with episodes starting part way (their state zeroed)."""
    from neuroplug.nets.layers import core_sequence, core_update

    network = MLP(6, [], 3, "tanh", core=core, core_size=8)
    layer = next(layer for layer in network.layers if layer.kind == core)
    assert layer.activation == "identity"
    steps, rows = 7, 4
    generator = torch.Generator().manual_seed(3)
    params = network.initial_params(generator).requires_grad_()
    inputs = torch.randn(steps, rows, 6, requires_grad=True)
    state = torch.randn(rows, network.state_size, requires_grad=True)
    keep = torch.ones(steps, rows, 1, dtype=torch.bool)
    keep[2, 1] = keep[5, 0] = keep[0, 3] = False
    output_weights, state_weights = torch.randn(steps, rows, 8), torch.randn(rows, 8)

    def loss(outputs, final_state):
        return (outputs * output_weights).sum() + (final_state[:, :8] * state_weights).sum()

    outputs, final_state = core_sequence(layer, network.layout, params, inputs, state, keep)
    written_out = torch.autograd.grad(loss(outputs, final_state), (params, inputs, state))

    tensor = lambda name: network.layout.tensor(params, name)  # noqa: E731
    # The same gates as core_sequence's one product: the comparison is of the steps alone.
    gates = torch.addmm(tensor("core.b"), inputs.reshape(steps * rows, 6), tensor("core.w"))
    gates = gates.reshape(steps, rows, -1)
    stepped, previous = [], state
    for step in range(steps):
        output, previous = core_update(
            core,
            gates[step],
            previous * keep[step],
            lambda h: torch.addmm(tensor("core.c"), h, tensor("core.u")),
        )
        stepped.append(output)
    stepped = torch.stack(stepped)
    autograd = torch.autograd.grad(loss(stepped, previous), (params, inputs, state))

    assert torch.equal(outputs, stepped) and torch.equal(final_state, previous)
    for ours, theirs in zip(written_out, autograd, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    assert (written_out[2][3] == 0).all()  # a row that starts an episode forgets its state
