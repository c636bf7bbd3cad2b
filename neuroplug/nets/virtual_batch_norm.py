"""Virtual batch norm (``net.vbn``): every hidden layer normalized by a fixed reference batch.

Salimans et al. (2016) introduced it for GANs; OpenAI's ES (Salimans et al. 2017) used it
for every Atari run and called it essential there, because it makes a policy's response
to a small perturbation of its weights far less dependent on the weights' scale. A
normalized layer's output ``y = x W + b`` becomes, per output channel (a convolution's
channel, a linear layer's unit) c::

    y_hat_c = gamma_c * (y_c - mean_c) / sqrt(var_c + eps) + beta_c

where ``mean_c`` and ``var_c`` are the statistics of ``y_c`` over a reference batch of
observations collected once at the start of the run (and, for a convolution, over its
positions), computed with the member's own weights, each layer's after the normalization
of the layers before it. ``gamma`` and ``beta`` are parameters like any other (ES perturbs
them). ``eps`` is 1e-3, as in the Atari ES policy of Uber's deep-neuroevolution code.

With the reference batch fixed, ``y_hat`` is an affine function of ``x``, so the statistics
fold into the layer's weight and bias::

    W' = W * a        b' = (b - mean) * a + beta        a = gamma / sqrt(var + eps)

A deployed member is therefore an ordinary network of the same layer table: a backend
computes every member's statistics in one batched forward over the reference batch when it
loads a population (once per generation, not per step), folds them in, and then steps its
members as it steps any others: alive members only, each member's outputs independent of
its company. The layer's own bias cancels in ``y - mean``; it stays in the layout so every
layer has the same slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from neuroplug.nets.layers import (
    ACTIVATIONS,
    CONV2D,
    Layer,
    as_float,
    members_pre_activation,
)
from neuroplug.nets.layout import ParameterLayout

EPSILON = 1e-3
"""Added to the variance: Uber's ESAtariPolicy's ``batch_norm(epsilon=1e-3)``."""

ACTIVATION_BUDGET_BYTES = 256 * 2**20
"""About the most memory one chunk of members' reference forward may hold: a population's
statistics are computed a chunk of members at a time."""


def norm_slots(name: str, width: int) -> list[tuple[str, tuple[int, ...]]]:
    """The slots of a normalized layer ``name`` with ``width`` output channels: its scale
    (gamma) and shift (beta)."""
    return [(f"{name}.gamma", (width,)), (f"{name}.beta", (width,))]


def with_norm(layer: Layer, name: str) -> Layer:
    """``layer`` normalized with the slots of :func:`norm_slots` ``(name, ...)``."""
    return replace(layer, scale=f"{name}.gamma", shift=f"{name}.beta")


def initialize_norm(params: torch.Tensor, layout: ParameterLayout, layers: Sequence[Layer]) -> None:
    """Batch norm's start in ``params`` ``(D,)``: gamma 1 and beta 0, the normalized output
    itself."""
    for layer in layers:
        if layer.normalized:
            for name, value in ((layer.scale, 1.0), (layer.shift, 0.0)):
                slot = layout.slots[name]
                params[slot.offset : slot.offset + slot.size] = value


def statistics_size(layout: ParameterLayout, layers: Sequence[Layer]) -> int:
    """M: numbers of reference statistics per member (a mean and a variance per channel
    of every normalized layer)."""
    return sum(2 * _channels(layout, layer) for layer in layers if layer.normalized)


def reference_statistics(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: torch.Tensor,
    reference: torch.Tensor,
) -> torch.Tensor:
    """``(n, M)``: each member's (row of ``params``) means and variances of every
    normalized layer on ``reference`` (``(b, *input)``), in layer order, each layer's means
    then its variances. Members run a chunk at a time (:data:`ACTIVATION_BUDGET_BYTES`),
    in the batched products of the population's forward, so a member's statistics do not
    depend on its company."""
    normalized_at = [index for index, layer in enumerate(layers) if layer.normalized]
    if not normalized_at:
        return params.new_zeros((len(params), 0))
    prefix = list(layers[: normalized_at[-1] + 1])
    reference = reference.to(params.device)
    found, start, chunk = [], 0, 1
    while start < len(params):
        part = params[start : start + chunk]
        statistics, member_bytes = _chunk_statistics(prefix, layout, part, reference)
        found.append(statistics)
        start += len(part)
        # Three tensors of the largest size live at once (an input, its copy, the output).
        chunk = max(1, ACTIVATION_BUDGET_BYTES // (3 * member_bytes))
    return torch.cat(found) if found else params.new_zeros((0, statistics_size(layout, layers)))


def fold_statistics(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: torch.Tensor,
    statistics: torch.Tensor,
) -> torch.Tensor:
    """A copy of ``params`` ``(n, D)`` with each member's ``statistics`` (``(n, M)``, from
    :func:`reference_statistics`) folded into its normalized layers' weights and biases:
    what the forwards of :mod:`neuroplug.nets.layers` run."""
    folded = params.clone()
    views = {name: layout.view(folded, name) for name in layout.slots}
    offset = 0
    for layer in layers:
        if not layer.normalized:
            continue
        channels = _channels(layout, layer)
        mean = statistics[:, offset : offset + channels]
        variance = statistics[:, offset + channels : offset + 2 * channels]
        offset += 2 * channels
        scale = views[layer.scale] * torch.rsqrt(variance + EPSILON)
        weight = views[layer.weight]
        if layer.kind == CONV2D:  # (n, out, in, k, k)
            weight.mul_(scale[:, :, None, None, None])
        else:  # (n, in, out)
            weight.mul_(scale.unsqueeze(1))
        views[layer.bias].sub_(mean).mul_(scale).add_(views[layer.shift])
    return folded


def _channels(layout: ParameterLayout, layer: Layer) -> int:
    return layout.slots[layer.bias].shape[0]


def _chunk_statistics(
    layers: Sequence[Layer], layout: ParameterLayout, params: torch.Tensor, reference: torch.Tensor
) -> tuple[torch.Tensor, int]:
    """The statistics of a chunk of members, and the bytes per member of its largest tensor."""
    members, rows = len(params), len(reference)
    shared = as_float(reference, params.dtype)
    # Every member reads the same rows: a real copy each (the batched products and the
    # grouped convolution take one block of rows per member).
    hidden = shared.unsqueeze(0).expand(members, *shared.shape).contiguous()
    member_bytes = hidden[0].numel() * hidden.element_size()
    views = layout.views(params)
    found = []
    for layer in layers:
        hidden, _ = members_pre_activation(layer, layout, views, hidden, rows, None)
        member_bytes = max(member_bytes, hidden.numel() * hidden.element_size() // members)
        if layer.normalized:
            mean, variance = _channel_moments(layer, hidden, members, rows)
            found += [mean, variance]
            scale = views[layer.scale] * torch.rsqrt(variance + EPSILON)
            shift = views[layer.shift] - mean * scale
            hidden = hidden * _per_channel(layer, scale, hidden) + _per_channel(
                layer, shift, hidden
            )
        hidden = ACTIVATIONS[layer.activation](hidden)
    return torch.cat(found, dim=1), member_bytes


def _channel_moments(
    layer: Layer, outputs: torch.Tensor, members: int, rows: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per member and channel, the mean and (biased, as batch norm's) variance of a
    layer's outputs: ``(b, K*C, H, W)`` for a convolution, ``(K, b, C)`` otherwise."""
    if layer.kind == CONV2D:
        by_channel = outputs.reshape(rows, members, -1, outputs.shape[-2] * outputs.shape[-1])
        by_channel = by_channel.permute(1, 2, 0, 3).reshape(members, by_channel.shape[2], -1)
    else:
        by_channel = outputs.transpose(1, 2).contiguous()
    # Each (member, channel) is one contiguous row reduced alone: its result does not
    # depend on how many members the chunk holds.
    mean = by_channel.mean(dim=-1)
    variance = (by_channel - mean.unsqueeze(-1)).square().mean(dim=-1)
    return mean, variance


def _per_channel(layer: Layer, values: torch.Tensor, outputs: torch.Tensor) -> torch.Tensor:
    """``values`` ``(K, C)`` shaped to broadcast over a layer's outputs."""
    if layer.kind == CONV2D:  # (b, K*C, H, W)
        return values.reshape(1, -1, 1, 1)
    return values.unsqueeze(1)  # (K, b, C)
