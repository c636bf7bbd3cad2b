"""Genomes as chains of seeds, shared by ``ga`` and ``map_elites``'s Gaussian variation.

A chain ``[s_0, s_1, ..., s_m]`` is a network: ``init(s_0)``, then one Gaussian mutation
per later seed, ``+ scale_k * eps(s_k)`` (Such et al. 2017's compact encoding). A
checkpoint keeps chains, never weights, and the weights are replayed with the very
operation that built them (:meth:`Population.materialize` of one child), so a resumed
run continues bit-identically.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import torch

from neuroplug.population.members import Population

Chain = list[int]
"""A genome: the init seed, then the seed of every mutation since."""


def mutate(params: torch.Tensor, seed: int, scale: float) -> torch.Tensor:
    """``params + scale * eps(seed)``, by the code path that materialises children."""
    child = Population(
        bases=params.unsqueeze(0),
        base_index=torch.zeros(1, dtype=torch.int64),
        scale=torch.tensor([scale], dtype=torch.float32),
        seed=torch.tensor([seed], dtype=torch.int64),
    )
    return child.materialize(device="cpu")[0]


def build(
    chains: list[Chain],
    num_params: int,
    fresh_params: Callable[[int], torch.Tensor],
    scale_at: Callable[[int], float],
) -> torch.Tensor:
    """The ``(n, D)`` weights of genomes, each prefix that several share built once.

    ``scale_at(k)``: the mutation scale of a chain's ``k``-th seed (``k >= 1``)."""
    weights = torch.empty(len(chains), num_params)
    # Depth first over the tree of shared prefixes: (weights after `depth` seeds, genomes).
    pending: list[tuple[torch.Tensor | None, list[int], int]] = [
        (None, list(range(len(chains))), 0)
    ]
    while pending:
        prefix, genomes, depth = pending.pop()
        branches: dict[int, list[int]] = defaultdict(list)
        for genome in genomes:
            if len(chains[genome]) == depth:
                weights[genome] = prefix
            else:
                branches[chains[genome][depth]].append(genome)
        for seed, branch in branches.items():
            child = fresh_params(seed) if prefix is None else mutate(prefix, seed, scale_at(depth))
            pending.append((child, branch, depth + 1))
    return weights
