"""A fully connected layer of a block of members under low-rank (EGGROLL) perturbations.

For rows sharing one base W, ``x (W + s A Bᵀ/√r) = x W + (s/√r (x A)) Bᵀ``. Two passes:

1. **projection** (:func:`lowrank_projection_kernel`): each row's ``s/√r · x A``, a
   ``rank``-vector, with ``A`` rebuilt from the member's seed in registers
   (layout in :mod:`neuroplug.population.lowrank`). ``A`` is generated once per row, not once per block
   of outputs: the noise a layer draws is the minimum, ``rank x (fan_in + fan_out)`` per row.
2. **shared product plus factors** (:func:`lowrank_linear_kernel`): ``x W`` as one matrix
   product over blocks of rows (the whole batch is one GEMM when the population has one
   base), with each row's ``projected · Bᵀ``, the bias and its dense noise and the
   activation added in the epilogue.

**Batch invariance.** A member's outputs must not depend on the batch it rides in (the
schedulers' identical results and resume rely on it; ``tests/plugins/neuroplug_backends/test_batch_invariance.py``).
Block sizes depend only on the layer's shape and on whether the population has one base,
never on the call. And since a matrix unit may round a row by its place in the block, rows
sit in fixed tiles (:func:`row_tiles`): member ``m`` is always slot ``m % ROW_BLOCK`` of
tile ``m // ROW_BLOCK``, whatever else is alive, so it is computed by the same
instructions in the same place in every call. The tiles are worked out on the host from
the member list, which is already there: no device sync.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import triton
import triton.language as tl

from neuroplug_triton.kernels.activation import activate
from neuroplug_triton.kernels.noise import noise_at, noise_rows_per_seed

ROW_BLOCK = 16
"""Rows per program when the population has one base (``tl.dot`` needs 16)."""
PROJECTION_ROWS = 16
PROJECTION_K = 32


@triton.jit
def lowrank_projection_kernel(
    x_ptr,
    out_ptr,
    slot_row_ptr,
    slot_member_ptr,
    scale_ptr,
    seed_ptr,
    w_offset,
    num_slots,
    K,
    stride_x,
    correction_scale,
    RANK: tl.constexpr,
    BLOCK_R: tl.constexpr,
    ALIGNED: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """``out[s] = scale_m / √rank · x_j A_m`` for slot ``s`` holding member ``m`` on row
    ``j`` of ``x``: ``(num_slots, BLOCK_R)`` float32 (zero for empty slots)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_r = tl.arange(0, BLOCK_R)
    in_range = offs_m < num_slots
    rows = tl.load(slot_row_ptr + offs_m, mask=in_range, other=-1)
    mask_m = rows >= 0
    mask_r = offs_r < RANK
    members = tl.load(slot_member_ptr + offs_m, mask=in_range, other=0)
    scale = tl.load(scale_ptr + members, mask=mask_m, other=0.0)
    seed = tl.load(seed_ptr + members, mask=mask_m, other=0)
    x_rows = x_ptr + tl.maximum(rows, 0).to(tl.int64)[:, None] * stride_x
    projected = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K
        x = tl.load(x_rows + offs_k[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        if ALIGNED:
            factor_a = noise_rows_per_seed(
                seed[:, None, None], w_offset + offs_k * RANK, BLOCK_M, BLOCK_K, BLOCK_R
            )
        else:
            a_index = w_offset + offs_k[:, None] * RANK + offs_r[None, :]
            factor_a = noise_at(seed[:, None, None], a_index[None, :, :])
        factor_a = tl.where((mask_k[:, None] & mask_r[None, :])[None, :, :], factor_a, 0.0)
        projected += tl.sum(x.to(tl.float32)[:, :, None] * factor_a, axis=1)
    projected = projected * (scale * correction_scale)[:, None]
    out = out_ptr + offs_m.to(tl.int64)[:, None] * BLOCK_R + offs_r[None, :]
    tl.store(out, projected, mask=in_range[:, None])


@triton.jit
def lowrank_linear_kernel(
    x_ptr,
    projected_ptr,
    out_ptr,
    slot_row_ptr,
    slot_member_ptr,
    base_index_ptr,
    scale_ptr,
    seed_ptr,
    params_ptr,
    num_params,
    w_offset,
    b_offset,
    num_slots,
    K,
    N,
    stride_x,
    stride_out,
    ACTIVATION: tl.constexpr,
    RANK: tl.constexpr,
    BLOCK_R: tl.constexpr,
    ALIGNED: tl.constexpr,
    USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """One program: one tile of ``BLOCK_M`` slots (one base, as the launcher guarantees) x
    ``BLOCK_N`` outputs; slot ``s`` reads row ``slot_row[s]`` of ``x`` and writes that row
    of ``out`` (``-1``: an empty slot)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_r = tl.arange(0, BLOCK_R)
    in_range = offs_m < num_slots
    rows = tl.load(slot_row_ptr + offs_m, mask=in_range, other=-1)
    mask_m = rows >= 0
    mask_n = offs_n < N
    mask_r = offs_r < RANK
    members = tl.load(slot_member_ptr + offs_m, mask=in_range, other=0)
    scale = tl.load(scale_ptr + members, mask=mask_m, other=0.0)
    seed = tl.load(seed_ptr + members, mask=mask_m, other=0)
    first_member = tl.load(slot_member_ptr + tl.program_id(0) * BLOCK_M)
    base = tl.load(base_index_ptr + first_member).to(tl.int64)
    weights = params_ptr + base * num_params
    x_rows = x_ptr + tl.maximum(rows, 0).to(tl.int64)[:, None] * stride_x
    # The shared product x W: the base's weight tiles are read once per block of rows.
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K
        x = tl.load(x_rows + offs_k[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        x = x.to(tl.float32)
        index = w_offset + offs_k[:, None] * N + offs_n[None, :]
        w = tl.load(weights + index, mask=mask_k[:, None] & mask_n[None, :], other=0.0)
        if USE_DOT:
            acc += tl.dot(x, w.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.sum(x[:, :, None] * w.to(tl.float32)[None, :, :], axis=1)
    # Each row's own term: its projection (already scaled) through its B factor.
    projected = tl.load(
        projected_ptr + offs_m.to(tl.int64)[:, None] * BLOCK_R + offs_r[None, :],
        mask=in_range[:, None],
        other=0.0,
    )
    if ALIGNED:
        factor_b = noise_rows_per_seed(
            seed[:, None, None], w_offset + K * RANK + offs_n * RANK, BLOCK_M, BLOCK_N, BLOCK_R
        )
    else:
        b_index = w_offset + K * RANK + offs_n[:, None] * RANK + offs_r[None, :]
        factor_b = noise_at(seed[:, None, None], b_index[None, :, :])
    factor_b = tl.where((mask_n[:, None] & mask_r[None, :])[None, :, :], factor_b, 0.0)
    acc += tl.sum(projected[:, None, :] * factor_b, axis=2)
    bias = tl.load(weights + b_offset + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    bias_noise = noise_at(seed[:, None], (b_offset + offs_n)[None, :])
    acc = activate(acc + bias[None, :] + scale[:, None] * bias_noise, ACTIVATION)
    out = out_ptr + tl.maximum(rows, 0).to(tl.int64)[:, None] * stride_out + offs_n[None, :]
    tl.store(out, acc, mask=mask_m[:, None] & mask_n[None, :])


@dataclass(frozen=True)
class RowTiles:
    """Where the rows of one forward call sit in fixed tiles of members."""

    slot_row: torch.Tensor
    """``(num_slots,)`` int64 on the device: the call's row in each slot, ``-1`` if empty."""
    slot_member: torch.Tensor
    """``(num_slots,)`` int64 on the device: each slot's member (any member of the tile's
    base for an empty slot)."""
    block: int
    """Slots per tile."""

    @property
    def num_slots(self) -> int:
        return len(self.slot_row)


def row_tiles(members: torch.Tensor, population_size: int, block: int, device) -> RowTiles:
    """The tiles of ``block`` slots holding ``members`` (a CPU tensor, one entry per row):
    member ``m`` in slot ``m % block`` of tile ``m // block``; a member on several rows takes
    the same slot of a further copy of its tile (copy ``c`` counts as member
    ``c * population_size + m``). Only tiles holding a row are listed, in order."""
    index = members.cpu().numpy().astype(np.int64)
    copies = np.zeros_like(index)
    if len(np.unique(index)) < len(index):
        order = np.argsort(index, kind="stable")
        _, starts, counts = np.unique(index[order], return_index=True, return_counts=True)
        copies[order] = np.arange(len(index)) - np.repeat(starts, counts)
    padded = -(-population_size // block) * block
    virtual = copies * padded + index
    tiles, place = np.unique(virtual // block, return_inverse=True)
    slot_row = np.full(len(tiles) * block, -1, dtype=np.int64)
    slot_row[place * block + virtual % block] = np.arange(len(index))
    # Every slot's own member where it exists; the same-base padding rule as an empty slot's
    # (a one-base population's tiles are all one base; block 1 leaves no slot empty).
    slot_member = (np.repeat(tiles, block) * block + np.tile(np.arange(block), len(tiles))) % padded
    slot_member = np.minimum(slot_member, population_size - 1)
    return RowTiles(
        torch.from_numpy(slot_row).to(device, non_blocking=True),
        torch.from_numpy(slot_member).to(device, non_blocking=True),
        block,
    )


def lowrank_linear(
    x: torch.Tensor,
    tiles: RowTiles,
    params: torch.Tensor,
    base_index: torch.Tensor,
    scale: torch.Tensor,
    seed: torch.Tensor,
    w_offset: int,
    b_offset: int,
    fan_out: int,
    rank: int,
    activation: int,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``(n, fan_out)`` float32: row ``j`` of ``x`` ``(n, fan_in)`` through its member, placed
    by ``tiles`` (:func:`row_tiles`).

    Tiles of :data:`ROW_BLOCK` slots need a population with one base (a tile shares the
    base's weight tiles); with several bases every slot is its own tile (``block`` 1).
    """
    if x.stride(1) != 1:
        x = x.contiguous()
    n, fan_in = x.shape
    if out is None:
        out = torch.empty((n, fan_out), dtype=torch.float32, device=x.device)
    if n == 0:
        return out
    block_r = triton.next_power_of_2(rank)
    # A rank that is a multiple of four puts every factor row on a Philox boundary.
    aligned = w_offset % 4 == 0 and rank % 4 == 0 and block_r == rank
    num_slots = tiles.num_slots
    projected = torch.empty((num_slots, block_r), dtype=torch.float32, device=x.device)
    lowrank_projection_kernel[(triton.cdiv(num_slots, PROJECTION_ROWS),)](
        x,
        projected,
        tiles.slot_row,
        tiles.slot_member,
        scale,
        seed,
        w_offset,
        num_slots,
        fan_in,
        x.stride(0),
        1.0 / math.sqrt(rank),
        RANK=rank,
        BLOCK_R=block_r,
        ALIGNED=aligned,
        BLOCK_M=PROJECTION_ROWS,
        BLOCK_K=PROJECTION_K,
    )
    tiled = tiles.block > 1
    block_n = max(16 if tiled else 4, min(64, triton.next_power_of_2(fan_out)))
    block_k = max(16 if tiled else 1, min(32, triton.next_power_of_2(fan_in)))
    grid = (num_slots // tiles.block, triton.cdiv(fan_out, block_n))
    lowrank_linear_kernel[grid](
        x,
        projected,
        out,
        tiles.slot_row,
        tiles.slot_member,
        base_index,
        scale,
        seed,
        params,
        params.shape[1],
        w_offset,
        b_offset,
        num_slots,
        fan_in,
        fan_out,
        x.stride(0),
        out.stride(0),
        ACTIVATION=activation,
        RANK=rank,
        BLOCK_R=block_r,
        ALIGNED=aligned,
        USE_DOT=tiled,
        BLOCK_M=tiles.block,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
    )
    return out
