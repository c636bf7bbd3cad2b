"""What the driver sends workers per generation: a population described, never its members.

A :class:`ShippedPopulation` is a population's bases, indices, scales and seeds (plus the
observation normalizer's state), put into Ray's object store once per evaluation round.
Where the population says its bases are members of an earlier one
(:class:`neuroplug.population.members.BaseOrigin`, the deep GA's parents), and the workers were
sent that earlier population, the bases travel as that population's key and the member
indices: O(B) numbers instead of ``B x D`` floats. A worker rebuilds them from the
population it still holds (:class:`WorkerPopulations`); one that does not hold it (it was
restarted) says so with :class:`MissingPopulation`, and the driver sends it the bases.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import torch

from neuroplug.population.lowrank import LowRank
from neuroplug.population.members import InitDraws, Population

KEPT_POPULATIONS = 4
"""Populations a worker (and the driver's record of what it sent) keeps: the deep GA's next
generation refers to the previous main round while an elite round runs in between."""


class MissingPopulation(RuntimeError):
    """A worker was asked to rebuild bases from a population it does not hold."""

    def __init__(self, key: int) -> None:
        super().__init__(f"this worker does not hold population {key}")
        self.key = key


@dataclass
class ShippedPopulation:
    """A population as sent to workers; ``bases`` is None when ``origin_key`` names them."""

    key: int
    bases: torch.Tensor | InitDraws | None
    origin_key: int | None
    origin_members: torch.Tensor | None
    """With ``origin_key``: base k is member ``origin_members[k]`` of that population."""
    base_index: torch.Tensor
    scale: torch.Tensor
    seed: torch.Tensor
    lowrank: LowRank | None
    sigma: torch.Tensor | None
    normalizer: dict[str, Any] | None
    """The observation normalizer's state for this round (None without one)."""

    @property
    def size_bytes(self) -> int:
        """Its serialised size: what each machine fetches once."""
        return len(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))


def ship(
    key: int, population: Population, normalizer: dict[str, Any] | None, origin_key: int | None
) -> ShippedPopulation:
    """Describe ``population`` for workers; its bases by reference to ``origin_key`` when
    given (the caller checked that the workers were sent ``population.origin.population``
    under that key)."""
    bases, members = population.bases, None
    if origin_key is not None:
        bases, members = None, population.origin.members.clone()
    elif isinstance(bases, torch.Tensor):
        bases = bases.detach().cpu()
    return ShippedPopulation(
        key=key,
        bases=bases,
        origin_key=origin_key,
        origin_members=members,
        base_index=population.base_index.cpu(),
        scale=population.scale.cpu(),
        seed=population.seed.cpu(),
        lowrank=population.lowrank,
        sigma=None if population.sigma is None else population.sigma.cpu(),
        normalizer=normalizer,
    )


class WorkerPopulations:
    """The populations a worker holds, most recent last, with their bases built."""

    def __init__(self) -> None:
        self._held: OrderedDict[int, Population] = OrderedDict()

    def __contains__(self, key: int) -> bool:
        return key in self._held

    def get(self, key: int) -> Population:
        """The population sent as ``key``."""
        return self._held[key]

    def hold(self, shipped: ShippedPopulation) -> Population:
        """Rebuild ``shipped`` (its bases from a held population when sent by reference)."""
        if shipped.key in self._held:
            return self._held[shipped.key]
        bases = shipped.bases
        if bases is None:
            if shipped.origin_key not in self._held:
                raise MissingPopulation(shipped.origin_key)
            origin = self._held[shipped.origin_key]
            bases = origin.materialize(shipped.origin_members, device="cpu")
        population = Population(
            bases, shipped.base_index, shipped.scale, shipped.seed, shipped.lowrank, shipped.sigma
        )
        self._held[shipped.key] = population
        while len(self._held) > KEPT_POPULATIONS:
            self._held.popitem(last=False)
        return population
