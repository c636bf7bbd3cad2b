"""The places a cached language model's step writes: every token of the context not yet in
its KV cache, in one forward (the prompt's prefill, then a token a step).

A text task's observation is the context so far (token ids + 1, 0 pads: the prompt at an
episode's start, then one more token a step). A model keeping its keys and values as its
recurrent state (``net.type=causal_lm``, ``pretrained_lm`` of the Llama family and GPT-2)
keeps the count of tokens its cache holds as the state's last number (zero at an
episode's start, where neuroplug zeroes a state). A step then runs the tokens from that
count to the newest as a block of queries, each attending to the cache and to the new
tokens before it, writes their keys and values into the cache, and returns the newest
token's output: the whole prompt at the first step, one token at each step after.

The block has one width for every row of a call (:func:`step_window`: the most new tokens
of any row); a row with fewer runs its first places again as places it already cached,
masked out of the writes. The width is a Python number taken from the batch before the
call (``vmap`` cannot branch on a tensor's values): a batched population passes it in,
a plain call computes it, and a call being traced or exported (TorchScript, ONNX: a graph
of fixed shapes) takes the whole context, the widest block, right for every input.
"""

from __future__ import annotations

from typing import NamedTuple

import torch


def cached_count(state: torch.Tensor) -> torch.Tensor:
    """How many tokens each row's cache holds ``(n,)`` (the state's last number)."""
    return state[:, -1].round().long()


def newest_place(observations: torch.Tensor) -> torch.Tensor:
    """Each context's newest place ``(n,)``: the last before the padding."""
    return ((observations != 0).sum(dim=-1) - 1).clamp(min=0)


def step_window(observations: torch.Tensor, state: torch.Tensor | None) -> int:
    """The most tokens any row of a step has not cached yet (at least 1): the width of the
    step's block of queries. ``observations`` ``(..., c)``, ``state`` ``(..., H)`` (None:
    an episode's start, nothing cached)."""
    observations = observations.reshape(-1, observations.shape[-1])
    fresh = newest_place(observations) + 1
    if state is not None:
        fresh = fresh - cached_count(state.reshape(-1, state.shape[-1]))
    return max(int(fresh.max()), 1) if len(fresh) else 1


def _fixed_graph() -> bool:
    """Whether the call is being traced or exported into a graph of fixed shapes."""
    return torch.jit.is_tracing() or torch.compiler.is_compiling() or torch.onnx.is_in_onnx_export()


class Block(NamedTuple):
    """A step's block of queries, ``window`` places a row ending at its newest token."""

    places: torch.Tensor
    """``(n, window)``: each query's place in the context (0 where it would be before it)."""
    tokens: torch.Tensor
    """``(n, window)``: the token id at each place."""
    writes: torch.Tensor
    """``(n, window, c)`` bool: a query's place, where its key and value are new (none
    where they are cached already)."""
    sees: torch.Tensor
    """``(n, window, c)`` bool: the places each query attends to (itself and before)."""
    count: torch.Tensor
    """``(n, 1)`` float: the tokens cached after the step (the state's new last number)."""


def block(observations: torch.Tensor, state: torch.Tensor, window: int | None = None) -> Block:
    """The step's :class:`Block` of ``observations`` ``(n, c)`` from ``state`` ``(n, H)``;
    ``window`` None: :func:`step_window` of these rows."""
    ids = observations.long()
    context = ids.shape[1]
    if window is None:
        window = context if _fixed_graph() else step_window(observations, state)
    newest = newest_place(ids)
    offsets = torch.arange(1 - window, 1, device=ids.device)  # the newest last
    raw = newest.unsqueeze(1) + offsets  # (n, w)
    places = raw.clamp(min=0)
    # New: from the cache's count on; the newest always (a step that adds no token writes
    # its own place again, the same numbers).
    first_new = torch.minimum(cached_count(state), newest).unsqueeze(1)
    fresh = (raw >= first_new) & (raw >= 0)
    slots = torch.arange(context, device=ids.device)
    at = places.unsqueeze(-1) == slots  # (n, w, c)
    tokens = (torch.gather(ids, 1, places) - 1).clamp(min=0)
    sees = slots <= places.unsqueeze(-1)
    writes = at & fresh.unsqueeze(-1)
    count = (newest + 1).unsqueeze(1).to(state.dtype)
    return Block(places, tokens, writes, sees, count)


def write(cache: torch.Tensor, new: torch.Tensor, writes: torch.Tensor) -> torch.Tensor:
    """``cache`` ``(n, ..., c, d)`` with the block's new rows ``new`` ``(n, ..., w, d)``
    placed where ``writes`` ``(n, w, c)`` says: a selection per query of the block (one at
    each step after the prompt), which ``vmap`` and every device run alike (a product of
    the one-hot places cost several times more on CPU)."""
    middle = [1] * (cache.dim() - 3)
    for query in range(new.shape[-2]):
        place = writes[:, query].view(writes.shape[0], *middle, -1, 1)  # (n, ..., c, 1)
        cache = torch.where(place, new[..., query : query + 1, :], cache)
    return cache
