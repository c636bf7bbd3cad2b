"""Counter-based Gaussian noise: the same (seed, index) gives the same number anywhere.

The generator is Philox4x32-10 in Triton's layout, so a Triton kernel can rebuild any
member's perturbation inside its forward pass and ES can regenerate the noise of a member
from its seed alone. Noise element ``i`` of the member with ``seed`` is lane ``i % 4`` of
``tl.randn4x(seed, i // 4)``: one Philox call (key ``(seed, 0)``, counter
``(i // 4, 0, 0, 0)``) gives four 32-bit words, i.e. four uniforms, i.e. two Box–Muller
pairs (cos, sin). Using all four words makes generation four times cheaper than
``tl.randn``'s one-normal-per-call layout.

Integer work happens on int64 tensors holding 32-bit values. Products of two 32-bit
values may wrap around 2**64; two's-complement wrapping keeps the low 64 bits exact, and
those are all Philox needs (``tests/population/test_noise.py`` checks the published known answers
on whatever machine runs it). Integers are bit-identical on CPU and CUDA; the floats
differ at most by the last bit of ``log``/``cos``.
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF
_KEY_A = 0x9E3779B9
_KEY_B = 0xBB67AE85
_ROUND_A = 0xD2511F53
_ROUND_B = 0xCD9E8D57
_ROUNDS = 10
_UNIFORM_SCALE = 4.6566127342e-10  # 1 / 2**31, as Triton uses
_TWO_PI = 6.283185307179586
_CHUNK_ELEMENTS = 1 << 22  # bounds the int64 temporaries to a few hundred MB

MAX_SEED = 2**31 - 1
"""Seeds are in [0, MAX_SEED], so kernels can load them as 32-bit keys."""


def philox4x32(
    key: torch.Tensor, counter: torch.Tensor, key_hi: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Philox4x32-10 of counter ``(counter, 0, 0, 0)`` under key ``(key, key_hi)``.

    Inputs are int64 tensors of 32-bit values that broadcast together; returns four
    int64 tensors of 32-bit outputs.
    """
    c0 = (counter & _MASK32) + torch.zeros_like(key)
    c1, c2, c3 = torch.zeros_like(c0), torch.zeros_like(c0), torch.zeros_like(c0)
    k0 = key & _MASK32
    k1 = int(key_hi) & _MASK32
    # Each round writes into buffers allocated once: a round is ten passes over the
    # counters, and allocating (and page-faulting) fresh tensors for each cost more than
    # the arithmetic. The low words (c1, c3) are the products themselves, unmasked: they
    # reach the next round only through an XOR that is masked, and are masked at the end.
    spare_a, spare_b = torch.empty_like(c0), torch.empty_like(c0)
    for _ in range(_ROUNDS):
        product_b = torch.mul(c2, _ROUND_B, out=spare_b)
        product_a = torch.mul(c0, _ROUND_A, out=spare_a)
        # The 64-bit products wrap past 2**63 (negative): the shift's sign bits are masked.
        torch.bitwise_right_shift(product_b, 32, out=c0)
        c0 ^= c1
        c0 ^= k0
        c0 &= _MASK32
        torch.bitwise_right_shift(product_a, 32, out=c2)
        c2 ^= c3
        c2 ^= k1
        c2 &= _MASK32
        spare_b, spare_a, c1, c3 = c1, c3, product_b, product_a
        k0 = (k0 + _KEY_A) & _MASK32
        k1 = (k1 + _KEY_B) & _MASK32
    c1 &= _MASK32
    c3 &= _MASK32
    return c0, c1, c2, c3


def _uniform(bits: torch.Tensor) -> torch.Tensor:
    """Triton's ``uint_to_uniform_float``: 32 random bits to a float32 in [0, 1).

    Triton reads the bits as a signed int32 ``s`` and takes ``-s - 1`` where negative:
    ``s ^ (s >> 31)`` (the narrowing to int32 keeps the low 32 bits, as C++ defines it).
    """
    signed = bits.to(torch.int32)
    signed ^= signed >> 31
    return signed.to(torch.float32).mul_(_UNIFORM_SCALE)


def _box_muller(bits_r: torch.Tensor, bits_theta: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Triton's ``pair_uniform_to_normal``: two words of bits to (r cos, r sin)."""
    radius = _uniform(bits_r).clamp_(min=1.0e-7).log_().mul_(-2.0).sqrt_()
    angle = _uniform(bits_theta).mul_(_TWO_PI)
    return radius * torch.cos(angle), radius.mul_(torch.sin(angle))


def _noise_block(seeds: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Noise for parameters ``[start, stop)`` of each seed: ``(len(seeds), stop - start)``."""
    first_counter, last_counter = start // 4, (stop + 3) // 4
    counters = torch.arange(first_counter, last_counter, dtype=torch.int64, device=seeds.device)
    words = philox4x32(seeds.unsqueeze(1), counters.unsqueeze(0))
    lanes = torch.empty((len(seeds), len(counters), 4), dtype=torch.float32, device=seeds.device)
    lanes[..., 0], lanes[..., 1] = _box_muller(words[0], words[1])
    lanes[..., 2], lanes[..., 3] = _box_muller(words[2], words[3])
    offset = start - 4 * first_counter
    return lanes.view(len(seeds), -1)[:, offset : offset + stop - start]


def noise_vectors(
    seeds: torch.Tensor,
    num_params: int,
    start: int = 0,
    stop: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """eps(seed) for each seed: a ``(len(seeds), stop - start)`` float32 matrix.

    Entry ``[i, j]`` is noise element ``start + j`` of the member with ``seeds[i]``;
    ``start``/``stop`` let callers build a slice of a large network.
    """
    stop = num_params if stop is None else stop
    if not 0 <= start <= stop <= num_params:
        raise ValueError(f"noise slice [{start}, {stop}) is outside [0, {num_params})")
    device = seeds.device if device is None else torch.device(device)
    seeds = seeds.to(device=device, dtype=torch.int64).reshape(-1)
    out = torch.empty((len(seeds), stop - start), dtype=torch.float32, device=device)
    if len(seeds) == 0 or stop == start:
        return out
    # Chunk along the parameters so the temporaries stay bounded for big networks.
    step = max(4, (_CHUNK_ELEMENTS // len(seeds)) // 4 * 4)
    for chunk_start in range(start, stop, step):
        chunk_stop = min(stop, chunk_start + step)
        out[:, chunk_start - start : chunk_stop - start] = _noise_block(
            seeds, chunk_start, chunk_stop
        )
    return out


def normals_at(keys: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """Four standard normals per (key, counter) pair: ``(..., 4)`` float32.

    ``keys`` and ``counters`` are int64 tensors of values in ``[0, 2**32)`` that broadcast
    together. Unlike :func:`noise_vectors`, each row may use its own counters, which lets
    a scheduler draw the action noise of (episode, step) wherever and whenever that step
    is played.
    """
    words = philox4x32(keys, counters)
    n0, n1 = _box_muller(words[0], words[1])
    n2, n3 = _box_muller(words[2], words[3])
    return torch.stack((n0, n1, n2, n3), dim=-1)


def gumbels_at(keys: torch.Tensor, counters: torch.Tensor) -> torch.Tensor:
    """Four standard Gumbel draws per (key, counter) pair: ``(..., 4)`` float32, as
    :func:`normals_at` draws normals (``argmax(logits + g)`` is a draw from
    ``softmax(logits)``: the Gumbel-max trick)."""
    words = philox4x32(keys, counters)
    uniforms = torch.stack([_uniform(word) for word in words], dim=-1)
    uniforms = torch.clamp(uniforms, min=1.0e-7, max=1.0 - 1.0e-7)
    return -torch.log(-torch.log(uniforms))
