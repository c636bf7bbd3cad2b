"""The counter-based noise generator: known answers, slicing, statistics, Triton agreement."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from neuroplug.population.noise import MAX_SEED, _uniform, gumbels_at, noise_vectors, philox4x32


def test_philox_matches_the_random123_known_answers():
    # Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
    words = philox4x32(torch.tensor(0), torch.tensor(0))
    assert [int(w) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_same_seed_and_index_give_the_same_number_whatever_the_slice():
    seeds = torch.tensor([3, 99, MAX_SEED])
    full = noise_vectors(seeds, 1001)
    assert torch.equal(noise_vectors(seeds, 1001, 5, 998), full[:, 5:998])
    assert torch.equal(noise_vectors(seeds[1:2], 1001), full[1:2])


def test_noise_is_standard_normal_and_seeds_are_independent():
    eps = noise_vectors(torch.tensor([1, 2]), 200_000)
    assert abs(float(eps.mean())) < 0.01
    assert abs(float(eps.std()) - 1.0) < 0.01
    correlation = torch.corrcoef(eps)[0, 1]
    assert abs(float(correlation)) < 0.01


def test_out_of_range_slice_is_rejected():
    with pytest.raises(ValueError, match="outside"):
        noise_vectors(torch.tensor([1]), 10, 5, 11)


def test_triton_randn4x_gives_the_same_noise(tmp_path):
    """The Triton backend generates noise in-kernel with tl.randn4x; it must agree."""
    pytest.importorskip("triton")
    script = textwrap.dedent(
        """
        import torch, triton, triton.language as tl
        from neuroplug.population.noise import noise_vectors

        @triton.jit
        def kernel(out, seed, N: tl.constexpr):
            counters = tl.arange(0, N)
            n0, n1, n2, n3 = tl.randn4x(seed, counters)
            tl.store(out + 4 * counters, n0)
            tl.store(out + 4 * counters + 1, n1)
            tl.store(out + 4 * counters + 2, n2)
            tl.store(out + 4 * counters + 3, n3)

        out = torch.empty(256, device="cuda" if torch.cuda.is_available() else "cpu")
        for seed in (0, 7, 123456789, 2**31 - 1):
            kernel[(1,)](out, seed, 64)
            reference = noise_vectors(torch.tensor([seed]), 256)[0]
            assert torch.allclose(out.cpu(), reference, atol=1e-5), seed
        print("ok")
        """
    )
    # TRITON_INTERPRET must be set before triton is imported, hence a fresh interpreter;
    # a GPU machine compiles the kernel instead, and Triton compiles only functions whose
    # source is in a file.
    env = dict(os.environ)
    if not torch.cuda.is_available():
        env["TRITON_INTERPRET"] = "1"
    (tmp_path / "randn4x.py").write_text(script)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "randn4x.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok" in done.stdout


def test_gumbel_max_draws_follow_the_softmax():
    """argmax(logits + Gumbel) over counter-based draws picks each action as often as its
    softmax probability (Gumbel-max), and the same (key, counter) draws the same."""
    logits = torch.tensor([0.0, 1.0, 2.0, -1.0])
    keys = torch.arange(40_000, dtype=torch.int64).unsqueeze(1)
    draws = gumbels_at(keys, torch.zeros((1, 1), dtype=torch.int64)).reshape(-1, 4)
    assert torch.equal(
        draws, gumbels_at(keys, torch.zeros((1, 1), dtype=torch.int64)).reshape(-1, 4)
    )
    chosen = (logits + draws).argmax(dim=1)
    frequencies = torch.bincount(chosen, minlength=4).float() / len(chosen)
    torch.testing.assert_close(frequencies, torch.softmax(logits, 0), atol=0.01, rtol=0)


def _philox_in_python(key: int, counter: int, key_hi: int) -> list[int]:
    """Philox4x32-10 on Python integers, as Random123 writes it (the test's reference)."""
    mask = 0xFFFFFFFF
    c, k = [counter, 0, 0, 0], [key, key_hi]
    for _ in range(10):
        product_a, product_b = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [
            (product_b >> 32) ^ c[1] ^ k[0],
            product_b & mask,
            (product_a >> 32) ^ c[3] ^ k[1],
            product_a & mask,
        ]
        k = [(k[0] + 0x9E3779B9) & mask, (k[1] + 0xBB67AE85) & mask]
    return c


def test_philox_matches_a_plain_implementation_over_the_whole_32_bit_range():
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**32, 40, dtype=np.int64)
    counters = rng.integers(0, 2**32, 40, dtype=np.int64)
    keys[:2], counters[:2] = 2**32 - 1, 2**32 - 1  # every bit set: the products wrap
    for key_hi in (0, 2**32 - 1, 123_456_789):
        words = philox4x32(torch.from_numpy(keys), torch.from_numpy(counters), key_hi)
        found = torch.stack(words, dim=1).tolist()
        expected = [
            _philox_in_python(int(k), int(c), key_hi) for k, c in zip(keys, counters, strict=True)
        ]
        assert found == expected


def test_uniforms_fold_the_bits_as_triton_does():
    # Triton reads 32 bits as a signed int s, takes -s - 1 where s < 0, and scales by 2**-31.
    bits = torch.tensor([0, 1, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 1], dtype=torch.int64)
    signed = [b - 2**32 if b >= 2**31 else b for b in bits.tolist()]
    folded = [-s - 1 if s < 0 else s for s in signed]
    expected = torch.tensor(folded, dtype=torch.float32) * 4.6566127342e-10
    assert torch.equal(_uniform(bits), expected)
