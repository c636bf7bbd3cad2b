"""Low-rank perturbations (EGGROLL): a member's weight matrix moves by A·Bᵀ, not dense noise.

Sarkar et al. (2025), "Evolution Strategies at the Hyperscale" (EGGROLL). For a weight
matrix W (rows x cols) a member uses ``W + scale * A @ B.T / sqrt(rank)`` with A
(rows x rank) and B (cols x rank) standard normal, so a layer's forward pass is
``x W + scale/sqrt(rank) * (x A) B.T``: the ``x W`` term is shared by every member of a
base and the member's own work is ``rank * (rows + cols)`` instead of ``rows * cols``. A
convolution kernel ``(out, in, kh, kw)`` is the matrix ``(out, in * kh * kw)`` of its
row-major entries, so its perturbation is ``rank`` filters ``B`` mixed into ``out``
channels by ``A``.

The factors come from the member's ordinary noise stream, inside the matrix's own slice of
it: A is noise elements ``offset + [0, rows*rank)`` (row-major, ``A[i, r]`` at
``offset + i*rank + r``), B the next ``cols*rank`` (``B[j, r]`` at
``offset + rows*rank + j*rank + r``). So seeds mean the same thing everywhere, no two
tensors share noise, and everything outside the listed matrices (biases, convolutions,
small matrices) keeps its full-rank noise. The ES update, the torch backend (through
:meth:`neuroplug.population.members.Population.materialize`) and the Triton kernels all build
the perturbation from this one definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from neuroplug.nets.layout import ParameterLayout
from neuroplug.population.noise import noise_vectors


@dataclass(frozen=True)
class LowRankMatrix:
    """A weight matrix of the flat parameter vector that gets a low-rank perturbation."""

    offset: int
    """Where the matrix starts in the flat vector (row-major)."""
    rows: int
    cols: int


@dataclass(frozen=True)
class LowRank:
    """Which matrices are perturbed by rank-``rank`` products instead of dense noise."""

    rank: int
    matrices: tuple[LowRankMatrix, ...]

    def matrix_at(self, offset: int) -> LowRankMatrix | None:
        """The low-rank matrix starting at ``offset``, if one does."""
        for matrix in self.matrices:
            if matrix.offset == offset:
                return matrix
        return None


def lowrank_for(layout: ParameterLayout, rank: int, min_size: int) -> LowRank:
    """The weight matrices and convolution kernels of ``layout`` with at least ``min_size``
    entries, perturbed at ``rank``.

    A matrix whose factors would not fit in its own noise slice
    (``rank * (rows + cols) > rows * cols``) gains nothing and keeps dense noise.
    """
    matrices = []
    for slot in layout.slots.values():
        if len(slot.shape) not in (2, 4) or slot.size < min_size:
            continue
        # A convolution kernel (out, in, kh, kw) is the matrix (out, in * kh * kw).
        rows, cols = slot.shape[0], slot.size // slot.shape[0]
        if rank * (rows + cols) <= slot.size:
            matrices.append(LowRankMatrix(slot.offset, rows, cols))
    return LowRank(rank, tuple(matrices))


def perturbation_vectors(
    seeds: torch.Tensor,
    num_params: int,
    lowrank: LowRank | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The ``(len(seeds), num_params)`` perturbation directions of the given seeds.

    Without ``lowrank`` this is ``eps(seed)`` itself; with it, each listed matrix's slice is
    replaced by ``A @ B.T / sqrt(rank)`` built from that slice's noise.
    """
    eps = noise_vectors(seeds, num_params, device=device)
    if lowrank is None:
        return eps
    rank = lowrank.rank
    for matrix in lowrank.matrices:
        start, size = matrix.offset, matrix.rows * matrix.cols
        factor_a = eps[:, start : start + matrix.rows * rank].reshape(-1, matrix.rows, rank)
        stop_b = start + (matrix.rows + matrix.cols) * rank
        factor_b = eps[:, start + matrix.rows * rank : stop_b].reshape(-1, matrix.cols, rank)
        product = torch.bmm(factor_a, factor_b.transpose(1, 2)) / math.sqrt(rank)
        eps[:, start : start + size] = product.reshape(len(eps), size)
    return eps
