"""What a recurrent core plugin is (:class:`RecurrentCore`) and finding one by name.

A layer of the table whose kind is not ``linear`` or ``conv2d`` is a recurrent core named
by a ``neuroplug.cores`` entry point (:mod:`neuroplug.nets.core` holds the first-party
``gru`` and ``lstm`` and how a network lays one out). This module sits below the layer
table, which runs a core's :meth:`RecurrentCore.update` on the gates it computed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import torch

from neuroplug.nets.layout import ParameterLayout


class RecurrentCore:
    """A gated recurrent cell, the base of every ``neuroplug.cores`` plugin.

    Subclasses set :attr:`gates` (and :attr:`state_blocks` when the state is wider than
    the output) and write :meth:`update`. The table gives the core four slots:
    ``core.w (fan_in, gates*H)``, ``core.b (gates*H,)``, ``core.u (H, gates*H)``,
    ``core.c (gates*H,)``.
    """

    gates: int = 1
    """Blocks of ``H`` units in ``x W + b`` and in ``h U + c``."""
    state_blocks: int = 1
    """The state's width in units of ``H`` (an LSTM's ``h`` and ``c``: 2)."""
    through_time: type[torch.autograd.Function] | None = None
    """:meth:`sequence`'s pass under autograd with its backward written out through time
    (``apply(input_gates, state, keep, recurrent_weight, recurrent_bias)``, as
    :meth:`sequence` returns); None: autograd walks the steps of :meth:`update`."""

    def update(
        self,
        input_gates: torch.Tensor,
        state: torch.Tensor,
        state_gates: Callable[[torch.Tensor], torch.Tensor],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The output ``(..., H)`` and next state ``(..., state_blocks*H)`` from ``x W + b``
        (``(..., gates*H)``), the state, and ``state_gates`` (``h -> h U + c``, applied to
        whichever ``(..., H)`` part of the state the cell chooses). Element-wise apart from
        ``state_gates`` (use :data:`neuroplug.nets.layers.ACTIVATIONS`), so that a member's
        result does not depend on the rows beside it."""
        raise NotImplementedError

    def sequence(
        self,
        input_gates: torch.Tensor,
        state: torch.Tensor,
        keep: torch.Tensor,
        recurrent_weight: torch.Tensor,
        recurrent_bias: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A learner's pass over ``L`` steps of ``B`` rows: outputs ``(L, B, H)`` and the
        final state from every step's input gates ``(L, B, gates*H)``, the state before the
        first ``(B, state_blocks*H)``, and ``keep`` ``(L, B, 1)`` (0 where a step starts an
        episode: the state is zeroed before it), ``state_gates`` being
        ``h -> h recurrent_weight + recurrent_bias``: the same numbers as :meth:`update`
        step by step; under autograd by :attr:`through_time` where the core has one."""
        if self.through_time is not None and torch.is_grad_enabled():
            return self.through_time.apply(
                input_gates, state, keep, recurrent_weight, recurrent_bias
            )
        outputs = []
        for step in range(len(input_gates)):
            output, state = self.update(
                input_gates[step],
                state * keep[step],
                lambda h: torch.addmm(recurrent_bias, h, recurrent_weight),
            )
            outputs.append(output)
        return torch.stack(outputs), state

    def initialize(
        self, params: torch.Tensor, layout: ParameterLayout, generator: torch.Generator
    ) -> None:
        """Fill the core's slots in ``params``; by default as ``torch.nn.GRUCell`` and
        ``LSTMCell`` do: every weight and bias uniform in ``[-1/sqrt(H), 1/sqrt(H)]``."""
        size = layout.slots["core.u"].shape[0]
        bound = 1.0 / math.sqrt(size)
        for name in ("core.w", "core.b", "core.u", "core.c"):
            slot = layout.slots[name]
            values = torch.rand(slot.shape, generator=generator) * (2 * bound) - bound
            params[slot.offset : slot.offset + slot.size] = values.flatten()


def core_names() -> list[str]:
    """The installed cores (entry-point metadata only: imports nothing)."""
    # Imported at call time: the registry sits above the networks (it names their base
    # classes); a core is looked up only when a network with one is built or run.
    from neuroplug import registry

    return sorted(registry.discover("cores"))


@cache
def load_core(name: str) -> RecurrentCore:
    """The installed core ``name``, imported once."""
    from neuroplug import registry

    return registry.load("cores", name)()
