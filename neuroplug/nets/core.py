"""The recurrent core an encoder may feed (``net.core=gru``): its slots, layer and start.

Sample Factory's default policy is an encoder, a GRU core and linear heads; the networks
here insert the core the same way, between their last hidden layer (the encoder's output)
and their output layer. The core is one ``gru`` layer of the table
(:mod:`neuroplug.nets.layers`), so every forward that reads the table runs it.
"""

from __future__ import annotations

import math

import torch

from neuroplug.errors import require
from neuroplug.nets.layers import GRU, Layer
from neuroplug.nets.layout import ParameterLayout

CORES = ("none", "gru")
"""``net.core`` values."""


def check_core(core: str, core_size: int | None) -> None:
    """Refuse an unknown ``net.core`` or a size below 1, naming the field."""
    require(core in CORES, "net.core", f"got {core!r}", ", ".join(CORES))
    require(
        core_size is None or core_size >= 1,
        "net.core_size",
        f"got {core_size}",
        "a positive integer, or null for the encoder's width",
    )


def core_slots(fan_in: int, size: int) -> list[tuple[str, tuple[int, ...]]]:
    """The core's slots: input weight and bias, state weight and bias (gates r, z, n)."""
    return [
        ("core.w", (fan_in, 3 * size)),
        ("core.b", (3 * size,)),
        ("core.u", (size, 3 * size)),
        ("core.c", (3 * size,)),
    ]


def core_layer() -> Layer:
    """The core's row of the layer table."""
    return Layer(GRU, "core.w", "core.b", recurrent_weight="core.u", recurrent_bias="core.c")


def initialize_core(
    params: torch.Tensor, layout: ParameterLayout, generator: torch.Generator
) -> None:
    """Fill the core's slots in ``params`` as ``torch.nn.GRUCell`` does: every weight and
    bias uniform in ``[-1/sqrt(H), 1/sqrt(H)]``."""
    size = layout.slots["core.u"].shape[0]
    bound = 1.0 / math.sqrt(size)
    for name in ("core.w", "core.b", "core.u", "core.c"):
        slot = layout.slots[name]
        values = torch.rand(slot.shape, generator=generator) * (2 * bound) - bound
        params[slot.offset : slot.offset + slot.size] = values.flatten()
