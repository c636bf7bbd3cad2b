"""A fully connected layer of a block of members under low-rank (EGGROLL) perturbations.

For rows sharing one base W, ``x (W + s A Bᵀ/√r) = x W + s/√r (x A) Bᵀ``: the ``x W`` term is
an ordinary matrix product over the whole block of rows (one GEMM for the population when
it has one base), and each row adds its own rank-r correction with A and B rebuilt from its
seed in registers (layout in :mod:`neuroplug.lowrank`). The bias keeps dense noise.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from neuroplug_triton.kernels.activation import activate
from neuroplug_triton.kernels.noise import noise_at, noise_rows_per_seed


@triton.jit
def lowrank_linear_kernel(
    x_ptr,
    out_ptr,
    rows_ptr,
    base_index_ptr,
    scale_ptr,
    seed_ptr,
    params_ptr,
    num_params,
    w_offset,
    b_offset,
    num_rows,
    K,
    N,
    stride_x,
    stride_out,
    correction_scale,
    ACTIVATION: tl.constexpr,
    RANK: tl.constexpr,
    BLOCK_R: tl.constexpr,
    ALIGNED: tl.constexpr,
    USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """One program: ``BLOCK_M`` rows (one base, as the launcher guarantees) x ``BLOCK_N`` outputs."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_r = tl.arange(0, BLOCK_R)
    mask_m = offs_m < num_rows
    mask_n = offs_n < N
    mask_r = offs_r < RANK
    members = tl.load(rows_ptr + offs_m, mask=mask_m, other=0)
    scale = tl.load(scale_ptr + members, mask=mask_m, other=0.0)
    seed = tl.load(seed_ptr + members, mask=mask_m, other=0)
    first_member = tl.load(rows_ptr + tl.program_id(0) * BLOCK_M)
    base = tl.load(base_index_ptr + first_member).to(tl.int64)
    weights = params_ptr + base * num_params
    x_rows = x_ptr + offs_m.to(tl.int64)[:, None] * stride_x
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    projected = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)  # x A, per row
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
        if ALIGNED:
            factor_a = noise_rows_per_seed(
                seed[:, None, None], w_offset + offs_k * RANK, BLOCK_M, BLOCK_K, BLOCK_R
            )
        else:
            a_index = w_offset + offs_k[:, None] * RANK + offs_r[None, :]
            factor_a = noise_at(seed[:, None, None], a_index[None, :, :])
        factor_a = tl.where((mask_k[:, None] & mask_r[None, :])[None, :, :], factor_a, 0.0)
        projected += tl.sum(x[:, :, None] * factor_a, axis=1)
    if ALIGNED:
        factor_b = noise_rows_per_seed(
            seed[:, None, None], w_offset + K * RANK + offs_n * RANK, BLOCK_M, BLOCK_N, BLOCK_R
        )
    else:
        b_index = w_offset + K * RANK + offs_n[:, None] * RANK + offs_r[None, :]
        factor_b = noise_at(seed[:, None, None], b_index[None, :, :])
    factor_b = tl.where((mask_n[:, None] & mask_r[None, :])[None, :, :], factor_b, 0.0)
    correction = tl.sum(projected[:, None, :] * factor_b, axis=2)
    acc += (scale * correction_scale)[:, None] * correction
    bias = tl.load(weights + b_offset + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    bias_noise = noise_at(seed[:, None], (b_offset + offs_n)[None, :])
    acc = activate(acc + bias[None, :] + scale[:, None] * bias_noise, ACTIVATION)
    out = out_ptr + offs_m.to(tl.int64)[:, None] * stride_out + offs_n[None, :]
    tl.store(out, acc, mask=mask_m[:, None] & mask_n[None, :])


def lowrank_linear(
    x: torch.Tensor,
    rows: torch.Tensor,
    params: torch.Tensor,
    base_index: torch.Tensor,
    scale: torch.Tensor,
    seed: torch.Tensor,
    w_offset: int,
    b_offset: int,
    fan_out: int,
    rank: int,
    activation: int,
    one_base: bool,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``(n, fan_out)`` float32: row ``j`` of ``x`` ``(n, fan_in)`` through member ``rows[j]``.

    ``one_base`` says every member perturbs the same base, so rows are tiled in blocks
    that share the base's weight tiles; otherwise each program takes a single row.
    """
    if x.stride(1) != 1:
        x = x.contiguous()
    n, fan_in = x.shape
    if out is None:
        out = torch.empty((n, fan_out), dtype=torch.float32, device=x.device)
    if n == 0:
        return out
    use_dot = one_base and n >= 16
    block_m = 16 if use_dot else (triton.next_power_of_2(min(n, 8)) if one_base else 1)
    block_n = max(16 if use_dot else 4, min(64, triton.next_power_of_2(fan_out)))
    block_k = max(16 if use_dot else 1, min(32, triton.next_power_of_2(fan_in)))
    grid = (triton.cdiv(n, block_m), triton.cdiv(fan_out, block_n))
    lowrank_linear_kernel[grid](
        x,
        out,
        rows,
        base_index,
        scale,
        seed,
        params,
        params.shape[1],
        w_offset,
        b_offset,
        n,
        fan_in,
        fan_out,
        x.stride(0),
        out.stride(0),
        1.0 / math.sqrt(rank),
        ACTIVATION=activation,
        RANK=rank,
        BLOCK_R=triton.next_power_of_2(rank),
        # A rank that is a multiple of four puts every factor row on a Philox boundary.
        ALIGNED=w_offset % 4 == 0 and rank % 4 == 0 and triton.next_power_of_2(rank) == rank,
        USE_DOT=use_dot,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
    )
    return out
