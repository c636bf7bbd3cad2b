"""Attention in a population of modules: run batched over members (no loop, no warning),
each member's outputs those of its own module with PyTorch's attention."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch
from attention_nets import DotProduct, Encoder, SelfAttention

from neuroplug.nets.attention import multi_head_attention
from neuroplug.nets.module_network import ModuleNetwork

MODULES = {
    "multi-head, batch first": SelfAttention,
    "multi-head, sequence first": functools.partial(SelfAttention, batch_first=False),
    "transformer encoder layer": Encoder,
    "scaled dot product": DotProduct,
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_population_runs_attention_batched_as_each_member_alone(name):
    network = ModuleNetwork(MODULES[name], (4,), 3)
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(5)])
    inputs = torch.randn(5, 4, generator=generator)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batched = network.forward_population(params, inputs)
    assert not [w for w in caught if "batching rule" in str(w.message)]
    alone = torch.cat(
        [network.forward_single(params[j], inputs[j : j + 1]) for j in range(5)]
    )  # PyTorch's own attention, one member at a time
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_written_out_multi_head_attention_is_pytorchs(batch_first):
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).eval()
    shape = (3, 5, 8) if batch_first else (5, 3, 8)
    query, key = torch.randn(shape), torch.randn(shape)
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[1, 3:] = True
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    for kwargs in (
        {},
        {"attn_mask": causal},
        {"key_padding_mask": padding},
        {"average_attn_weights": False},
    ):
        expected = module(query, key, key, **kwargs)
        got = multi_head_attention(module, query, key, key, **kwargs)
        for want, have in zip(expected, got, strict=True):
            torch.testing.assert_close(have, want, atol=1e-6, rtol=1e-5)
        # Self-attention: the packed projection in one product.
        for want, have in zip(
            module(query, query, query, **kwargs),
            multi_head_attention(module, query, query, query, **kwargs),
            strict=True,
        ):
            torch.testing.assert_close(have, want, atol=1e-6, rtol=1e-5)
        # Without weights, the factored path's fused scores and mix: the same outputs.
        fused, none = multi_head_attention(
            module, query, key, key, need_weights=False, fused=True, **kwargs
        )
        assert none is None
        torch.testing.assert_close(fused, expected[0], atol=1e-6, rtol=1e-5)
