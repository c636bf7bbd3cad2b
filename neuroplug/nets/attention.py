"""Attention written out, so a population of members runs it batched.

``torch.func.vmap`` has no batching rule for PyTorch's fused attention
(``aten::_native_multi_head_attention``, ``aten::_scaled_dot_product_attention*``): over a
population it falls back to a loop over members, with a warning every call. Written with
``matmul`` and ``softmax``, whose batching rules exist, the same attention runs as one
computation for every member (:func:`batched_attention`, used by
:class:`~neuroplug.nets.module_network.ModuleNetwork` around its vmapped calls).

:func:`multi_head_attention` is ``nn.MultiheadAttention.forward`` as math: the input
projections (packed, or separate for different key and value sizes), heads, an additive
or boolean ``attn_mask``, ``key_padding_mask``, ``is_causal``, the output projection, and
the attention weights when asked for (averaged over heads by default), with the linear
maps given as a function (``linear``), so the factored low-rank path can add each member's
part to every projection. ``add_bias_kv`` and ``add_zero_attn`` are not written out: such
a module keeps PyTorch's own forward. Dropout is not applied: members act in eval mode.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

Linear = Callable[[torch.Tensor, str, torch.Tensor, torch.Tensor | None], torch.Tensor]
"""``linear(x, name, weight, bias)``: ``x Wᵀ + b`` for the module's tensor ``name``
(``in_proj_weight``'s query third is ``q``, then ``k``, ``v``; the whole packed
``in_proj_weight`` at once, for self-attention, ``qkv``; and ``out_proj``)."""


def _plain_linear(x, name, weight, bias):
    return F.linear(x, weight, bias)


def scaled_dot_product(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` as math (no dropout: members act in eval mode)."""
    return _weights_and_output(query, key, value, _mask(attn_mask, is_causal, query, key), scale)[1]


def _mask(attn_mask, is_causal, query, key) -> torch.Tensor | None:
    """An additive mask: boolean masks mean True = attend (SDPA's sense, given here)."""
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        keep = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
        attn_mask = keep if attn_mask is None else attn_mask & keep
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        zeros = torch.zeros(attn_mask.shape, dtype=query.dtype, device=query.device)
        attn_mask = zeros.masked_fill(~attn_mask, float("-inf"))
    return attn_mask


def _weights_and_output(query, key, value, additive, scale):
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    if additive is not None:
        scores = scores + additive
    weights = torch.softmax(scores, dim=-1)
    return weights, torch.matmul(weights, value)


def multi_head_attention(
    module: nn.MultiheadAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    key_padding_mask: torch.Tensor | None = None,
    need_weights: bool = True,
    attn_mask: torch.Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
    linear: Linear = _plain_linear,
    fused: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``module(query, key, value, ...)`` as math (see the module docstring); ``fused``:
    the scores, softmax and mix by PyTorch's fused kernel where no weights are asked for
    (outside ``vmap``, as the factored low-rank path runs: the rows' own parts are in the
    projections alone)."""
    # Self-attention through a packed projection: one product for the three (as PyTorch's
    # fast path), each row's own part of it computed once.
    packed_self = module._qkv_same_embed_dim and query is key and key is value
    unbatched = query.dim() == 2
    if unbatched:
        query, key, value = (
            tensor.unsqueeze(1 if not module.batch_first else 0) for tensor in (query, key, value)
        )
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    if not module.batch_first:  # (L, N, E) -> (N, L, E)
        query, key, value = (tensor.transpose(0, 1) for tensor in (query, key, value))
    embed, heads = module.embed_dim, module.num_heads
    head_dim = embed // heads
    bias = module.in_proj_bias
    biases = bias.chunk(3) if bias is not None else (None, None, None)
    if module._qkv_same_embed_dim:
        weights = module.in_proj_weight.chunk(3)
    else:
        weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
    if packed_self:
        projected = linear(query, "qkv", module.in_proj_weight, bias).chunk(3, dim=-1)
    else:
        projected = [
            linear(tensor, name, weight, b)
            for tensor, name, weight, b in zip(
                (query, key, value), "qkv", weights, biases, strict=True
            )
        ]
    batch, length, source = query.shape[0], query.shape[1], key.shape[1]
    q, k, v = (tensor.reshape(batch, -1, heads, head_dim).transpose(1, 2) for tensor in projected)
    additive = None
    if attn_mask is not None or is_causal:
        if attn_mask is not None and attn_mask.dim() == 3:  # (N * heads, L, S)
            attn_mask = attn_mask.reshape(batch, heads, length, source)
        # nn.MultiheadAttention's boolean masks mean True = do not attend.
        keep = None if attn_mask is None or attn_mask.dtype != torch.bool else ~attn_mask
        additive = _mask(keep if keep is not None else attn_mask, is_causal, q, k)
    if key_padding_mask is not None:
        padding = key_padding_mask.reshape(batch, 1, 1, source)
        if padding.dtype == torch.bool:
            padding = torch.zeros(padding.shape, dtype=q.dtype, device=q.device).masked_fill(
                padding, float("-inf")
            )
        additive = padding if additive is None else additive + padding
    if fused and not need_weights:
        attention, output = None, _FUSED(q, k, v, attn_mask=additive)
    else:
        attention, output = _weights_and_output(q, k, v, additive, None)
    output = output.transpose(1, 2).reshape(batch, length, embed)
    output = linear(output, "out_proj", module.out_proj.weight, module.out_proj.bias)
    if not module.batch_first:
        output = output.transpose(0, 1)
    if unbatched:
        output = output.squeeze(1 if not module.batch_first else 0)
    if not need_weights:
        return output, None
    if average_attn_weights:
        attention = attention.mean(dim=1)
    if unbatched:
        attention = attention.squeeze(0)
    return output, attention


_FUSED = F.scaled_dot_product_attention
"""PyTorch's own, kept before :func:`batched_attention` swaps the name."""


def written_out(module: nn.MultiheadAttention) -> bool:
    """Whether :func:`multi_head_attention` computes this module's forward."""
    return module.bias_k is None and not module.add_zero_attn


@contextlib.contextmanager
def batched_attention(
    root: nn.Module,
    linear_for: Callable[[nn.MultiheadAttention], Linear] | None = None,
    fused: bool = False,
) -> Iterator[None]:
    """Within: every ``nn.MultiheadAttention`` of ``root`` runs :func:`multi_head_attention`
    (with ``linear_for(module)`` as its linear maps, when given), ``F.scaled_dot_product_attention`` runs
    :func:`scaled_dot_product`, and the transformer layers' fused fast path is off (swaps
    for the whole process while the block runs: what attends meanwhile gets the same
    attention, as math). ``fused`` (a call outside ``vmap``, where only the projections
    differ between rows): the scores and mix stay PyTorch's fused kernel."""
    patched = []
    for module in root.modules():
        if isinstance(module, nn.MultiheadAttention) and written_out(module):
            linear = linear_for(module) if linear_for is not None else _plain_linear

            def forward(*args, _module=module, _linear=linear, **kwargs):
                return multi_head_attention(_module, *args, **kwargs, linear=_linear, fused=fused)

            module.forward = forward
            patched.append(module)
    before = F.scaled_dot_product_attention
    if not fused:
        F.scaled_dot_product_attention = scaled_dot_product
    # nn.TransformerEncoderLayer's fast path is one fused op (no batching rule either):
    # off, it calls its attention module, written out above.
    fast_path = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path)
        F.scaled_dot_product_attention = before
        for module in patched:
            del module.forward
