"""The recurrent core an encoder may feed (``net.core=gru``): its slots, layer and start.

Sample Factory's default policy is an encoder, a GRU core and linear heads (CleanRL's
``ppo_atari_lstm.py`` uses an LSTM); the networks
here insert the core the same way, between their last hidden layer (the encoder's output)
and their output layer. The core is one ``gru`` layer of the table
(:mod:`neuroplug.nets.layers`), so every forward that reads the table runs it.
"""

from __future__ import annotations

import math

import torch

from neuroplug.errors import require
from neuroplug.nets.layers import GRU, LSTM, Layer
from neuroplug.nets.layout import ParameterLayout

CORES = ("none", "gru", "lstm")
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


GATES = {"gru": 3, "lstm": 4}
"""Gate blocks per core: a GRU's reset, update and new; an LSTM's input, forget, cell, output."""


def core_slots(core: str, fan_in: int, size: int) -> list[tuple[str, tuple[int, ...]]]:
    """The core's slots: input weight and bias, state weight and bias, one block per gate."""
    gates = GATES[core] * size
    return [
        ("core.w", (fan_in, gates)),
        ("core.b", (gates,)),
        ("core.u", (size, gates)),
        ("core.c", (gates,)),
    ]


def core_layer(core: str) -> Layer:
    """The core's row of the layer table."""
    kind = {"gru": GRU, "lstm": LSTM}[core]
    return Layer(kind, "core.w", "core.b", recurrent_weight="core.u", recurrent_bias="core.c")


def initialize_core(
    params: torch.Tensor, layout: ParameterLayout, generator: torch.Generator
) -> None:
    """Fill the core's slots in ``params`` as ``torch.nn.GRUCell`` and ``LSTMCell`` do:
    every weight and bias uniform in ``[-1/sqrt(H), 1/sqrt(H)]``."""
    size = layout.slots["core.u"].shape[0]
    bound = 1.0 / math.sqrt(size)
    for name in ("core.w", "core.b", "core.u", "core.c"):
        slot = layout.slots[name]
        values = torch.rand(slot.shape, generator=generator) * (2 * bound) - bound
        params[slot.offset : slot.offset + slot.size] = values.flatten()
