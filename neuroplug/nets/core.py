"""Recurrent cores an encoder may feed (``net.core=gru``): the first-party two and how
a network's layer table holds one.

Sample Factory's default policy is an encoder, a GRU core and linear heads (CleanRL's
``ppo_atari_lstm.py`` uses an LSTM); the networks here insert the core the same way,
between their last hidden layer (the encoder's output) and their output layer. A core is
one row of the layer table (:mod:`neuroplug.nets.layers`) whose kind is the core's name,
so every forward that reads the table runs it, member by member in one batch.

Cores are plugins of the ``neuroplug.cores`` entry-point group; ``gru`` and ``lstm`` are
registered there as a third-party package registers its own. A core is a *gated cell*:
its input gates ``x W + b`` and state gates ``h U + c`` are ``gates`` blocks of ``H``
units computed by the table (batched products, low-rank noise, written-out shapes); the
core supplies only the element-wise :meth:`~neuroplug.nets.cells.RecurrentCore.update` that turns them into the
output and the next state. (A core that is not of that form comes in as a recurrent
module, ``net.type=module`` with a ``state_size``: see docs/plugins.md, "Your own network".)
"""

from __future__ import annotations

import torch

from neuroplug.errors import require
from neuroplug.nets.cells import RecurrentCore, core_names, load_core
from neuroplug.nets.layers import Layer, gru_update, lstm_update
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.through_time import GRUThroughTime, LSTMThroughTime


class GRUCore(RecurrentCore):
    """The GRU (Cho et al. 2014) in PyTorch's ``GRUCell`` arithmetic: reset, update, new."""

    gates = 3
    through_time = GRUThroughTime

    def update(self, input_gates, state, state_gates):
        """``h' = (1 - z) n + z h``; the output is the new state."""
        new_state = gru_update(input_gates, state_gates(state), state)
        return new_state, new_state


class LSTMCore(RecurrentCore):
    """The LSTM (Hochreiter and Schmidhuber 1997) in PyTorch's ``LSTMCell`` arithmetic:
    input, forget, cell, output gates; the state is ``h`` and ``c`` side by side."""

    gates = 4
    state_blocks = 2
    through_time = LSTMThroughTime

    def update(self, input_gates, state, state_gates):
        """``c' = f c + i g``, ``h' = o tanh(c')``; the output is ``h'``."""
        size = state.shape[-1] // 2
        previous, cell = state[..., :size], state[..., size:]
        output, cell = lstm_update(input_gates + state_gates(previous), cell)
        return output, torch.cat((output, cell), dim=-1)


def check_core(core: str, core_size: int | None) -> None:
    """Refuse an unknown ``net.core`` or a size below 1, naming the field."""
    names = core_names()
    require(
        core == "none" or core in names, "net.core", f"got {core!r}", ", ".join(["none", *names])
    )
    require(
        core_size is None or core_size >= 1,
        "net.core_size",
        f"got {core_size}",
        "a positive integer, or null for the encoder's width",
    )


def core_slots(core: str, fan_in: int, size: int) -> list[tuple[str, tuple[int, ...]]]:
    """The core's slots: input weight and bias, state weight and bias, one block per gate."""
    gates = load_core(core).gates * size
    return [
        ("core.w", (fan_in, gates)),
        ("core.b", (gates,)),
        ("core.u", (size, gates)),
        ("core.c", (gates,)),
    ]


def core_layer(core: str) -> Layer:
    """The core's row of the layer table."""
    return Layer(core, "core.w", "core.b", recurrent_weight="core.u", recurrent_bias="core.c")


def initialize_core(
    core: str, params: torch.Tensor, layout: ParameterLayout, generator: torch.Generator
) -> None:
    """Fill the core's slots in ``params`` (:meth:`~neuroplug.nets.cells.RecurrentCore.initialize`)."""
    load_core(core).initialize(params, layout, generator)
