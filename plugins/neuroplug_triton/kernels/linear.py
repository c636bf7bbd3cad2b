"""A fully connected layer of every alive member, each with its own weights.

Row ``j`` of the input belongs to member ``m = rows[j]``, whose weight tile is
``params[b, offset:...] + scale[m] * sigma[b, offset:...] * eps(seed[m])`` with
``b = base_index[m]``, eps rebuilt in registers (``PERTURB``) and the sigma tile read like
the base tile (``SIGMA``; without it the factor is 1), or just ``params[b]`` for dense
populations (the launcher passes identity ``base_index`` and the materialised members as
``params``, float32 or bfloat16). The perturbed weights never touch memory. A member may bring
several observations (``M``): they share its weight tiles, so the weight bytes and the
noise are paid once per member, not once per observation.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from neuroplug_triton.kernels.activation import activate
from neuroplug_triton.kernels.noise import noise_at, noise_rows


@triton.jit
def population_linear_kernel(
    x_ptr,
    out_ptr,
    rows_ptr,
    base_index_ptr,
    scale_ptr,
    seed_ptr,
    params_ptr,
    sigma_ptr,
    num_params,
    w_offset,
    b_offset,
    K,
    N,
    M,
    stride_x_row,
    stride_x_m,
    stride_out_row,
    stride_out_m,
    input_scale,
    ACTIVATION: tl.constexpr,
    PERTURB: tl.constexpr,
    SIGMA: tl.constexpr,
    ALIGNED: tl.constexpr,
    USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """One program: one alive row (member) x ``BLOCK_N`` outputs, all its ``M`` observations."""
    row = tl.program_id(0).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    mask_n = offs_n < N
    mask_m = offs_m < M
    member = tl.load(rows_ptr + row)
    base = tl.load(base_index_ptr + member).to(tl.int64)
    weights = params_ptr + base * num_params
    sigmas = sigma_ptr + base * num_params
    if PERTURB:
        scale = tl.load(scale_ptr + member)
        seed = tl.load(seed_ptr + member)
    x_rows = x_ptr + row * stride_x_row + offs_m[:, None] * stride_x_m
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < K
        x = tl.load(x_rows + offs_k[None, :], mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        x = x.to(tl.float32) * input_scale
        index = w_offset + offs_k[:, None] * N + offs_n[None, :]
        mask_w = mask_k[:, None] & mask_n[None, :]
        w = tl.load(weights + index, mask=mask_w, other=0.0).to(tl.float32)
        if PERTURB:
            if ALIGNED:
                eps = noise_rows(
                    seed, w_offset + offs_k * N, tl.program_id(1) * BLOCK_N, BLOCK_K, BLOCK_N
                )
            else:
                eps = noise_at(seed, index)
            if SIGMA:
                eps = eps * tl.load(sigmas + index, mask=mask_w, other=0.0)
            w = w + tl.where(mask_w, scale * eps, 0.0)
        if USE_DOT:
            acc += tl.dot(x, w, input_precision="ieee")
        else:
            acc += tl.sum(x[:, :, None] * w[None, :, :], axis=1)
    bias = tl.load(weights + b_offset + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    if PERTURB:
        bias_noise = noise_at(seed, b_offset + offs_n)
        if SIGMA:
            bias_noise = bias_noise * tl.load(sigmas + b_offset + offs_n, mask=mask_n, other=0.0)
        bias = bias + scale * bias_noise
    acc = activate(acc + bias[None, :], ACTIVATION)
    out = out_ptr + row * stride_out_row + offs_m[:, None] * stride_out_m + offs_n[None, :]
    tl.store(out, acc, mask=mask_m[:, None] & mask_n[None, :])


def _pow2(value: int, floor: int, ceiling: int) -> int:
    return max(floor, min(ceiling, triton.next_power_of_2(max(value, 1))))


def population_linear(
    x: torch.Tensor,
    rows: torch.Tensor,
    params: torch.Tensor,
    base_index: torch.Tensor,
    scale: torch.Tensor,
    seed: torch.Tensor,
    w_offset: int,
    b_offset: int,
    fan_out: int,
    activation: int,
    perturb: bool,
    input_scale: float = 1.0,
    out: torch.Tensor | None = None,
    sigma: torch.Tensor | None = None,
) -> torch.Tensor:
    """``(n, M, fan_out)`` float32: row ``j`` of ``x`` ``(n, M, fan_in)`` through member ``rows[j]``.

    The weight is ``(fan_in, fan_out)`` at flat ``w_offset``, the bias at ``b_offset`` of the
    member's parameters. ``out`` may be given (written in place, rows ``>= n`` untouched).
    ``sigma`` (float32, shaped like ``params``) scales the noise per parameter.
    """
    if x.stride(2) != 1:
        x = x.contiguous()
    n, m, fan_in = x.shape
    if out is None:
        out = torch.empty((n, m, fan_out), dtype=torch.float32, device=x.device)
    if n == 0:
        return out
    use_dot = m >= 16  # tl.dot needs 16-wide tiles; one observation is a dot product per column
    block_m = _pow2(m, 16 if use_dot else 1, 64)
    block_n = _pow2(fan_out, 16 if use_dot else 4, 64)
    block_k = _pow2(fan_in, 16 if use_dot else 1, 32)
    # One Philox call per four weights when each weight row starts on a multiple of four.
    aligned = w_offset % 4 == 0 and fan_out % 4 == 0
    grid = (n, triton.cdiv(fan_out, block_n))
    population_linear_kernel[grid](
        x,
        out,
        rows,
        base_index,
        scale,
        seed,
        params,
        params if sigma is None else sigma,
        params.shape[1],
        w_offset,
        b_offset,
        fan_in,
        fan_out,
        m,
        x.stride(0),
        x.stride(1),
        out.stride(0),
        out.stride(1),
        input_scale,
        ACTIVATION=activation,
        PERTURB=perturb,
        SIGMA=perturb and sigma is not None,
        ALIGNED=aligned,
        USE_DOT=use_dot,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        BLOCK_K=block_k,
    )
    return out
