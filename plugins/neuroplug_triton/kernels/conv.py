"""A convolution (ReLU by default) of every alive member, each with its own filters (implicit GEMM).

Member ``m = rows[j]`` convolves its observations with filters
``params[b] + scale[m] * sigma[b] * eps(seed[m])``, ``b = base_index[m]`` (noise rebuilt in
registers when ``PERTURB``, the sigma tile read like the filter tile when ``SIGMA``, else
the factor is 1; dense populations pass materialised members and identity ``base_index``). The
input patches are gathered straight from the observation tensor — uint8 frames are read
as bytes and scaled in the kernel, no float copy of the batch is made — and zero padding
(TensorFlow's SAME) is a masked load. A member's observations share its filter tiles.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from neuroplug_triton.kernels.activation import ACTIVATION_CODES, activate
from neuroplug_triton.kernels.noise import noise_at, noise_rows


@triton.jit
def population_conv_kernel(
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
    C,
    H,
    W,
    CO,
    OH,
    OW,
    M,
    conv_stride,
    pad_top,
    pad_left,
    stride_x_row,
    stride_out_row,
    input_scale,
    KSIZE: tl.constexpr,
    ACTIVATION: tl.constexpr,
    PERTURB: tl.constexpr,
    SIGMA: tl.constexpr,
    ALIGNED: tl.constexpr,
    BLOCK_P: tl.constexpr,
    BLOCK_CO: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """One program: one alive row x ``BLOCK_P`` output pixels (over all its observations)
    x ``BLOCK_CO`` output channels."""
    row = tl.program_id(0).to(tl.int64)
    offs_q = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_co = tl.program_id(2) * BLOCK_CO + tl.arange(0, BLOCK_CO)
    pixels = OH * OW
    mask_q = offs_q < M * pixels
    mask_co = offs_co < CO
    obs = offs_q // pixels
    pixel = offs_q % pixels
    top = (pixel // OW) * conv_stride - pad_top
    left = (pixel % OW) * conv_stride - pad_left
    member = tl.load(rows_ptr + row)
    base = tl.load(base_index_ptr + member).to(tl.int64)
    weights = params_ptr + base * num_params
    sigmas = sigma_ptr + base * num_params
    if PERTURB:
        scale = tl.load(scale_ptr + member)
        seed = tl.load(seed_ptr + member)
    fan_in = C * KSIZE * KSIZE
    x_obs = x_ptr + row * stride_x_row + obs * (C * H * W)
    acc = tl.zeros((BLOCK_P, BLOCK_CO), dtype=tl.float32)
    for k0 in range(0, fan_in, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        mask_k = offs_k < fan_in
        channel = offs_k // (KSIZE * KSIZE)
        ih = top[:, None] + ((offs_k // KSIZE) % KSIZE)[None, :]
        iw = left[:, None] + (offs_k % KSIZE)[None, :]
        inside = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        valid = mask_q[:, None] & mask_k[None, :] & inside
        patch = tl.load(
            x_obs[:, None] + channel[None, :] * (H * W) + ih * W + iw, mask=valid, other=0
        )
        patch = patch.to(tl.float32) * input_scale
        # Filters are (CO, C, k, k): element [k, co] of this tile is co * fan_in + k.
        index = w_offset + offs_co[None, :] * fan_in + offs_k[:, None]
        mask_w = mask_k[:, None] & mask_co[None, :]
        w = tl.load(weights + index, mask=mask_w, other=0.0).to(tl.float32)
        if PERTURB:
            if ALIGNED:
                eps = tl.trans(noise_rows(seed, w_offset + offs_co * fan_in, k0, BLOCK_CO, BLOCK_K))
            else:
                eps = noise_at(seed, index)
            if SIGMA:
                eps = eps * tl.load(sigmas + index, mask=mask_w, other=0.0)
            w = w + tl.where(mask_w, scale * eps, 0.0)
        acc += tl.dot(patch, w, input_precision="ieee")
    bias = tl.load(weights + b_offset + offs_co, mask=mask_co, other=0.0).to(tl.float32)
    if PERTURB:
        bias_noise = noise_at(seed, b_offset + offs_co)
        if SIGMA:
            bias_noise = bias_noise * tl.load(sigmas + b_offset + offs_co, mask=mask_co, other=0.0)
        bias = bias + scale * bias_noise
    acc = activate(acc + bias[None, :], ACTIVATION)
    out = (
        out_ptr
        + row * stride_out_row
        + (obs * (CO * pixels) + pixel)[:, None]
        + offs_co[None, :] * pixels
    )
    tl.store(out, acc, mask=mask_q[:, None] & mask_co[None, :])


def population_conv(
    x: torch.Tensor,
    rows: torch.Tensor,
    params: torch.Tensor,
    base_index: torch.Tensor,
    scale: torch.Tensor,
    seed: torch.Tensor,
    w_offset: int,
    b_offset: int,
    out_channels: int,
    kernel_size: int,
    stride: int,
    padding: tuple[int, int, int, int],
    perturb: bool,
    input_scale: float = 1.0,
    out: torch.Tensor | None = None,
    sigma: torch.Tensor | None = None,
    activation: int = ACTIVATION_CODES["relu"],
) -> torch.Tensor:
    """``activation(conv(x))`` (an :data:`ACTIVATION_CODES` code) per member: ``x`` ``(n, M, C, H, W)`` -> ``(n, M, CO, OH, OW)`` float32.

    ``padding`` is ``(left, right, top, bottom)`` zeros, as ``F.pad`` takes it. ``out`` may
    be given (contiguous per row; written in place, rows ``>= n`` untouched). ``sigma``
    (float32, shaped like ``params``) scales the noise per parameter.
    """
    x = x.contiguous()
    n, m, channels, height, width = x.shape
    left, right, top, bottom = padding
    out_height = (height + top + bottom - kernel_size) // stride + 1
    out_width = (width + left + right - kernel_size) // stride + 1
    if out is None:
        out = torch.empty(
            (n, m, out_channels, out_height, out_width), dtype=torch.float32, device=x.device
        )
    if n == 0:
        return out
    fan_in = channels * kernel_size * kernel_size
    # tl.dot wants 16-wide tiles; the pixel and filter dimensions are padded up to them.
    block_p = max(16, min(64, triton.next_power_of_2(m * out_height * out_width)))
    block_co = max(16, min(64, triton.next_power_of_2(out_channels)))
    block_k = max(16, min(32, triton.next_power_of_2(fan_in)))
    aligned = w_offset % 4 == 0 and fan_in % 4 == 0
    grid = (
        n,
        triton.cdiv(m * out_height * out_width, block_p),
        triton.cdiv(out_channels, block_co),
    )
    population_conv_kernel[grid](
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
        channels,
        height,
        width,
        out_channels,
        out_height,
        out_width,
        m,
        stride,
        top,
        left,
        x.stride(0),
        out.stride(0),
        input_scale,
        KSIZE=kernel_size,
        ACTIVATION=activation,
        PERTURB=perturb,
        SIGMA=perturb and sigma is not None,
        ALIGNED=aligned,
        BLOCK_P=block_p,
        BLOCK_CO=block_co,
        BLOCK_K=block_k,
    )
    return out
