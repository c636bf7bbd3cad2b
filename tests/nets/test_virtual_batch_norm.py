"""Virtual batch norm (net.vbn): each member's layers normalized by its own statistics on a
fixed reference batch, folded into its weights so every forward runs it unchanged."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.nets.virtual_batch_norm import EPSILON, statistics_size


def _population(network, members: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    params = torch.stack([network.initial_params(generator) for _ in range(members)])
    # Scales and shifts away from their start (1, 0), as ES moves them.
    for layer in network.layers:
        if layer.normalized:
            for name in (layer.scale, layer.shift):
                slot = network.layout.slots[name]
                params[:, slot.offset : slot.offset + slot.size] += 0.3 * torch.randn(
                    members, slot.size, generator=generator
                )
    return params


def _batch_norm(outputs: torch.Tensor, reference: torch.Tensor, gamma, beta) -> torch.Tensor:
    """Batch norm of ``outputs`` by the statistics of ``reference`` (the same layer's
    outputs on the reference batch), per channel: dim 1 of both."""
    dims = [0, *range(2, reference.dim())]
    mean = reference.mean(dim=dims, keepdim=True)
    variance = reference.var(dim=dims, unbiased=False, keepdim=True)
    shape = [1, -1] + [1] * (reference.dim() - 2)
    normalized = (outputs - mean) / torch.sqrt(variance + EPSILON)
    return normalized * gamma.reshape(shape) + beta.reshape(shape)


def _reference_cnn(network: NatureCNN, params: torch.Tensor, reference, inputs):
    """One member's forward written out with torch's layers: the reference batch runs
    beside the inputs, and each normalized layer normalizes both by the reference's half."""
    tensor = lambda name: network.layout.tensor(params, name)  # noqa: E731
    both = torch.cat((reference, inputs)).float() / 255.0
    split = len(reference)
    for layer in network.layers:
        if layer.kind == "conv2d":
            both = F.conv2d(both, tensor(layer.weight), tensor(layer.bias), stride=layer.stride)
        else:
            both = both.flatten(1) @ tensor(layer.weight) + tensor(layer.bias)
        if layer.normalized:
            both = _batch_norm(both, both[:split], tensor(layer.scale), tensor(layer.shift))
        if layer.activation == "relu":
            both = torch.relu(both)
    return both[split:]


def test_the_nature_cnn_normalizes_every_hidden_layer_not_its_output():
    network = NatureCNN((4, 44, 44), 5, vbn=True)
    assert [layer.normalized for layer in network.layers] == [True, True, True, True, False]
    assert statistics_size(network.layout, network.layers) == 2 * (32 + 64 + 64 + 512)
    plain = NatureCNN((4, 44, 44), 5)
    assert network.num_params == plain.num_params + 2 * (32 + 64 + 64 + 512)
    assert "virtual batch norm" in network.describe()


def test_gamma_starts_at_one_and_beta_at_zero():
    network = MLP(4, [8, 8], 2, "tanh", vbn=True)
    params = network.initial_params(torch.Generator().manual_seed(0))
    views = network.layout.split(params)
    assert torch.equal(views["n0.gamma"], torch.ones(8))
    assert torch.equal(views["n1.beta"], torch.zeros(8))


def test_each_deployed_member_is_batch_norm_by_its_own_reference_statistics():
    network = NatureCNN((4, 44, 44), 5, vbn=True)
    generator = torch.Generator().manual_seed(1)
    network.reference_batch = network.example_inputs(16, generator)
    params = _population(network, 3)
    inputs = network.example_inputs(3, generator)
    outputs = network.forward_population(network.deploy(params), inputs)
    for member in range(3):
        expected = _reference_cnn(
            network, params[member], network.reference_batch, inputs[member : member + 1]
        )
        torch.testing.assert_close(outputs[member], expected[0], rtol=1e-4, atol=1e-4)


def test_normalization_changes_the_outputs_and_a_plain_network_deploys_as_it_is():
    network = MLP(4, [16], 3, "tanh", vbn=True)
    network.reference_batch = 5.0 + 3.0 * torch.randn(32, 4)
    params = _population(network, 2)
    inputs = torch.randn(2, 4)
    assert not torch.allclose(
        network.forward_population(network.deploy(params), inputs),
        network.forward_population(params, inputs),
    )
    plain = MLP(4, [16], 3, "tanh")
    plain_params = _population(plain, 2)
    assert plain.deploy(plain_params) is plain_params


def test_the_normalized_reference_batch_has_zero_mean_and_unit_variance_per_unit():
    network = MLP(4, [16, 8], 3, "tanh", vbn=True)
    network.reference_batch = 5.0 + 3.0 * torch.randn(64, 4)
    params = network.initial_params(torch.Generator().manual_seed(0)).unsqueeze(0)
    raw, folded = network.layout.split(params[0]), network.layout.split(network.deploy(params)[0])
    # The first layer on the reference batch, before and after the fold.
    before = network.reference_batch @ raw["w0"] + raw["b0"]
    after = network.reference_batch @ folded["w0"] + folded["b0"]
    torch.testing.assert_close(after.mean(0), torch.zeros(16), atol=1e-4, rtol=0)
    variance = before.var(0, unbiased=False)
    torch.testing.assert_close(after.var(0, unbiased=False), variance / (variance + EPSILON))


@pytest.mark.parametrize(
    "network", [MLP(4, [16, 8], 3, "tanh", vbn=True), NatureCNN((4, 44, 44), 5, vbn=True)]
)
@pytest.mark.kernels
def test_a_members_statistics_do_not_depend_on_its_companions(network):
    generator = torch.Generator().manual_seed(2)
    network.reference_batch = network.example_inputs(12, generator)
    params = _population(network, 5)
    together = network.reference_statistics(params)
    others = params.clone()
    others[:3] = _population(network, 3, seed=9)
    assert torch.equal(network.reference_statistics(others)[3], together[3])
    alone = network.reference_statistics(params[3:4])
    torch.testing.assert_close(together[3], alone[0], atol=1e-5, rtol=1e-5)


def test_statistics_are_computed_a_chunk_of_members_at_a_time(monkeypatch):
    from neuroplug.nets import virtual_batch_norm

    network = MLP(4, [16, 8], 3, "tanh", vbn=True)
    network.reference_batch = torch.randn(12, 4)
    params = _population(network, 7)
    whole = network.reference_statistics(params)
    monkeypatch.setattr(virtual_batch_norm, "ACTIVATION_BUDGET_BYTES", 1)
    assert torch.equal(network.reference_statistics(params), whole)


def test_deploying_without_a_reference_batch_says_what_is_missing():
    network = MLP(4, [8], 2, "tanh", vbn=True)
    params = _population(network, 2)
    with pytest.raises(RuntimeError, match="reference batch"):
        network.deploy(params)


@pytest.mark.kernels
def test_statistics_do_not_depend_on_the_thread_count():
    """A run changes PyTorch's thread count with the machine's load (neuroplug.runtime.devices)."""
    network = NatureCNN((4, 44, 44), 5, vbn=True)
    network.reference_batch = network.example_inputs(12, torch.Generator().manual_seed(4))
    params = _population(network, 3)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = network.reference_statistics(params)
        torch.set_num_threads(2)
        two = network.reference_statistics(params)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)
