"""The backward pass of a network made of linear layers, written out.

A learner's update on a small MLP (64-64 units on CartPole) spends more time in autograd's
bookkeeping (recording the graph, walking it, accumulating into each tensor's gradient)
than in the arithmetic. For such networks the gradient is a short loop over the layer table
(:mod:`neuroplug.nets.layers`), run backwards::

    for each layer, last first:   g <- g * act'(output)        (act' from the output alone)
                                  dW = input^T g;  db = sum_rows g;  g <- g W^T

with every activation's derivative written in terms of its output, so nothing but each
layer's input is kept from the forward pass. Gradients are written into tensors the caller
owns (a learner's flat gradient buffer), with no allocation per tensor. Networks with other
layer kinds (convolutions) are left to autograd: there the arithmetic dominates anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from neuroplug.nets.layers import ACTIVATIONS, LINEAR, Layer, forward_single
from neuroplug.nets.layout import ParameterLayout, Params

_aten = torch.ops.aten


def _elu_gradient(grad: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    # d/dx expm1(x) = exp(x) = output + 1 where x <= 0 (the branch ELU takes there).
    return torch.where(output > 0, grad, grad * (output + 1.0))


def _relu_gradient(grad: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    return _aten.threshold_backward(grad, output, 0)  # grad where y > 0, else 0


def _identity_gradient(grad: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    return grad


ACTIVATION_GRADIENTS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "tanh": _aten.tanh_backward,  # grad * (1 - y^2)
    "relu": _relu_gradient,
    "elu": _elu_gradient,
    "sigmoid": _aten.sigmoid_backward,  # grad * y * (1 - y)
    "identity": _identity_gradient,
}
"""Activation name -> ``(grad of the output, the output) -> grad of the input``: the
derivative of each of :data:`neuroplug.nets.layers.ACTIVATIONS` in terms of its output."""

assert set(ACTIVATION_GRADIENTS) == set(ACTIVATIONS), "every activation needs its gradient"


def written_out(layers: Sequence[Layer]) -> bool:
    """Whether :func:`backward` can differentiate ``layers``: all of them linear."""
    return bool(layers) and all(layer.kind == LINEAR for layer in layers)


def forward(
    layers: Sequence[Layer], layout: ParameterLayout, params: Params, inputs: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Outputs of ``layers`` (no autograd graph) and each layer's input, for :func:`backward`."""
    layer_inputs: list[torch.Tensor] = []
    with torch.no_grad():
        outputs = forward_single(layers, layout, params, inputs, layer_inputs)
    return outputs, layer_inputs


def backward(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: Params,
    layer_inputs: Sequence[torch.Tensor],
    outputs: torch.Tensor,
    grad_outputs: torch.Tensor,
    grads: dict[str, torch.Tensor],
    grad_features: torch.Tensor | None = None,
) -> None:
    """Write the gradient of every weight and bias of ``layers`` into ``grads`` (slot name
    -> a tensor of the slot's shape, overwritten), given the loss's gradient with respect to
    the network's ``outputs`` and what :func:`forward` kept. ``grad_features``: the loss's
    gradient with respect to the last hidden features (the last layer's input) through
    something else that reads them (a second head), added to the last layer's."""
    if not written_out(layers):
        raise ValueError("a written-out backward needs a network of linear layers only")
    grad = grad_outputs
    last = len(layers) - 1
    with torch.no_grad():
        for index in range(last, -1, -1):
            layer = layers[index]
            output = outputs if index == last else layer_inputs[index + 1]
            grad = ACTIVATION_GRADIENTS[layer.activation](grad, output)
            hidden = layer_inputs[index]
            hidden = hidden.reshape(len(hidden), -1)
            torch.mm(hidden.T, grad, out=grads[layer.weight])
            torch.sum(grad, 0, out=grads[layer.bias])
            if not index:
                break
            weight = layout.tensor(params, layer.weight)
            if index == last and grad_features is not None:
                grad = torch.addmm(grad_features, grad, weight.T)
            else:
                grad = grad @ weight.T


def forward_stacked(
    layers: Sequence[Layer], tensors: dict[str, torch.Tensor], inputs: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """:func:`forward` for K parameter sets at once: ``tensors`` holds each slot stacked
    over members (``(K, *shape)``), ``inputs`` is ``(K, b, fan_in)``; returns the outputs
    ``(K, b, out)`` and each layer's input. A member's rows are computed by its own
    matrices alone (one product per member in a batched multiply): the other members'
    values never reach them, though their number shapes the call and so its rounding.
    Observations of more than one axis (EnvPool's highway grids) are flattened first."""
    if not written_out(layers):
        raise ValueError("a written-out forward needs a network of linear layers only")
    layer_inputs: list[torch.Tensor] = []
    hidden = inputs.reshape(inputs.shape[0], inputs.shape[1], -1)
    with torch.no_grad():
        for layer in layers:
            layer_inputs.append(hidden)
            bias = tensors[layer.bias].unsqueeze(1)
            hidden = _stacked_product(hidden, tensors[layer.weight], bias)
            if layer.activation != "identity":
                hidden = ACTIVATIONS[layer.activation](hidden)
    return hidden, layer_inputs


def backward_stacked(
    layers: Sequence[Layer],
    tensors: dict[str, torch.Tensor],
    layer_inputs: Sequence[torch.Tensor],
    outputs: torch.Tensor,
    grad_outputs: torch.Tensor,
    grads: dict[str, torch.Tensor],
) -> None:
    """:func:`backward` for K parameter sets at once (see :func:`forward_stacked`):
    ``dW_k = input_k^T g_k``, ``db_k = sum_rows g_k``, ``g_k <- g_k W_k^T``, written into
    ``grads`` (slot name -> ``(K, *shape)``, overwritten)."""
    grad = grad_outputs
    with torch.no_grad():
        for index in range(len(layers) - 1, -1, -1):
            layer = layers[index]
            output = outputs if index == len(layers) - 1 else layer_inputs[index + 1]
            grad = ACTIVATION_GRADIENTS[layer.activation](grad, output)
            hidden = layer_inputs[index]
            grads[layer.weight].copy_(_stacked_product(hidden.transpose(1, 2), grad))
            grads[layer.bias].copy_(grad.sum(1))
            if index:
                grad = _stacked_product(grad, tensors[layer.weight].transpose(1, 2))


NARROW = 8
"""Products with at most this many output columns are computed transposed."""


def _stacked_product(
    left: torch.Tensor, right: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``left @ right (+ bias)`` for each member, ``(K, m, n)``. A product with few
    columns (a policy's or a value head's output, and their weights' gradients) is computed
    as ``(right^T left^T)^T``: MKL's batched kernels handle a narrow right-hand side much
    more slowly than the same arithmetic the other way round (``benchmarks/results/pbt.md``)."""
    if right.shape[-1] <= NARROW < left.shape[-2]:
        # The narrow operand (a member's slice of a stack, or a gradient) is copied to a
        # layout of its own, so BLAS sees the same strides every step.
        right, left = left.transpose(1, 2), right.transpose(1, 2).contiguous()
        if bias is None:
            return torch.bmm(left, right).transpose(1, 2).contiguous()
        bias = bias.transpose(1, 2).contiguous()
        return torch.baddbmm(bias, left, right).transpose(1, 2).contiguous()
    if bias is None:
        return torch.bmm(left, right)
    return torch.baddbmm(bias, left, right)
