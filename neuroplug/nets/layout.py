"""A network's parameters as named slices of one flat vector."""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import torch

Params = torch.Tensor | Mapping[str, torch.Tensor]
"""One network's parameters: a flat ``(D,)`` vector, or its named tensors (:meth:`ParameterLayout.split`)."""


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
        self._last_views: tuple[weakref.ref, dict[str, torch.Tensor]] | None = None

    def __getstate__(self) -> dict:
        # The remembered views are a cache (and weak references do not pickle).
        return {**self.__dict__, "_last_views": None}

    def view(self, params: torch.Tensor, name: str) -> torch.Tensor:
        """Tensor ``name`` for each row of ``params`` (n, D): shape ``(n, *slot.shape)``."""
        slot = self.slots[name]
        return params[:, slot.offset : slot.offset + slot.size].reshape(len(params), *slot.shape)

    def views(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every tensor of each row of ``params`` (n, D), by name: :meth:`view` of each slot.

        The views of the last ``params`` are kept (while that tensor lives): a backend
        running the same parameter matrix every env step then builds them once, not a
        dozen small tensor ops per step.
        """
        last = self._last_views
        if last is not None and last[0]() is params:
            return last[1]
        views = {name: self.view(params, name) for name in self.slots}
        self._last_views = (weakref.ref(params), views)
        return views

    def tensor(self, params: Params, name: str) -> torch.Tensor:
        """Tensor ``name`` of one parameter set: a view with the slot's shape of a flat
        ``(D,)`` vector, or the tensor itself of a set already split (:meth:`split`).

        A learner trains split tensors: slicing one flat vector costs a slice and a view
        per tensor forward, and a full-size zero-fill per tensor backward, on every step.
        """
        if not isinstance(params, torch.Tensor):
            return params[name]
        slot = self.slots[name]
        return params[slot.offset : slot.offset + slot.size].view(slot.shape)

    def split(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        """One flat ``(D,)`` vector as its named tensors (views, in layout order)."""
        return {name: self.tensor(params, name) for name in self.slots}

    def join(self, tensors: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """The flat ``(D,)`` vector of named tensors: the inverse of :meth:`split`."""
        return torch.cat([tensors[name].reshape(-1) for name in self.slots])
