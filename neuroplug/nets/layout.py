"""A network's parameters as named slices of one flat vector."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ParameterSlot:
    """One named tensor inside the flat parameter vector."""

    name: str
    shape: tuple[int, ...]
    offset: int

    @property
    def size(self) -> int:
        """Number of scalars in this tensor."""
        return math.prod(self.shape)


class ParameterLayout:
    """Ordered named tensors packed back to back into a flat vector."""

    def __init__(self, shapes: list[tuple[str, tuple[int, ...]]]) -> None:
        self.slots: dict[str, ParameterSlot] = {}
        offset = 0
        for name, shape in shapes:
            slot = ParameterSlot(name, tuple(shape), offset)
            self.slots[name] = slot
            offset += slot.size
        self.num_params = offset

    def view(self, params: torch.Tensor, name: str) -> torch.Tensor:
        """Tensor ``name`` for each row of ``params`` (n, D): shape ``(n, *slot.shape)``."""
        slot = self.slots[name]
        return params[:, slot.offset : slot.offset + slot.size].reshape(len(params), *slot.shape)

    def tensor(self, params: torch.Tensor, name: str) -> torch.Tensor:
        """Tensor ``name`` of one flat ``(D,)`` vector, a view with the slot's shape."""
        slot = self.slots[name]
        return params[slot.offset : slot.offset + slot.size].view(slot.shape)
