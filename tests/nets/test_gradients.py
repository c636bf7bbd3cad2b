"""The written-out backward pass of a linear network equals autograd's."""

from __future__ import annotations

import pytest
import torch

from neuroplug.nets import gradients
from neuroplug.nets.layers import ACTIVATIONS, CONV2D, LINEAR, Layer, forward_single
from neuroplug.nets.layout import ParameterLayout


def _funnel(activation: str) -> tuple[list[Layer], ParameterLayout]:
    """6 -> 5 -> 4 -> 3 with ``activation`` on both hidden layers and its own slot names."""
    shapes, layers = [], []
    for index, (fan_in, fan_out) in enumerate([(6, 5), (5, 4), (4, 3)]):
        shapes += [(f"k{index}", (fan_in, fan_out)), (f"shift{index}", (fan_out,))]
        last = index == 2
        layers.append(
            Layer(LINEAR, f"k{index}", f"shift{index}", "identity" if last else activation)
        )
    return layers, ParameterLayout(shapes)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("input_shape", [(6,), (2, 3)])
def test_the_written_out_backward_is_autograds(activation, input_shape):
    layers, layout = _funnel(activation)
    generator = torch.Generator().manual_seed(1)
    params = {
        name: torch.randn(slot.shape, generator=generator, dtype=torch.float64)
        for name, slot in layout.slots.items()
    }
    inputs = torch.randn(7, *input_shape, generator=generator, dtype=torch.float64)
    grad_outputs = torch.randn(7, 3, generator=generator, dtype=torch.float64)

    outputs, kept = gradients.forward(layers, layout, params, inputs)
    written = {name: torch.full_like(tensor, float("nan")) for name, tensor in params.items()}
    gradients.backward(layers, layout, params, kept, outputs, grad_outputs, written)

    leaves = {name: tensor.clone().requires_grad_() for name, tensor in params.items()}
    reference = forward_single(layers, layout, leaves, inputs)
    assert torch.equal(outputs, reference.detach())
    reference.backward(grad_outputs)
    for name, leaf in leaves.items():
        torch.testing.assert_close(written[name], leaf.grad, msg=f"{activation}: {name}")


def test_only_linear_networks_are_written_out():
    layout = ParameterLayout([("c", (2, 1, 3, 3)), ("cb", (2,)), ("w", (8, 2)), ("b", (2,))])
    convolution = [Layer(CONV2D, "c", "cb", "relu"), Layer(LINEAR, "w", "b")]
    assert not gradients.written_out(convolution)
    assert gradients.written_out(convolution[1:])
    with pytest.raises(ValueError, match="linear layers only"):
        gradients.backward(convolution, layout, {}, [], torch.zeros(1, 2), torch.zeros(1, 2), {})
