"""eps(seed) inside a Triton kernel, in the layout of :mod:`neuroplug.population.noise`.

Noise element ``i`` of a seed is lane ``i % 4`` of ``tl.randn4x(seed, i // 4)``. Any
element can be rebuilt on its own (:func:`noise_at`), but that spends a whole Philox call
per element; when a tile's rows start at multiples of four, :func:`noise_rows` spends one
call per four elements and interleaves the lanes back into place.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def noise_at(seed, index):
    """Noise element ``index`` (int32 tensor) of ``seed`` (int64, broadcasts with index)."""
    n0, n1, n2, n3 = tl.randn4x(seed, index // 4)
    lane = index % 4
    return tl.where(lane == 0, n0, tl.where(lane == 1, n1, tl.where(lane == 2, n2, n3)))


@triton.jit
def noise_rows(seed, row_start, column, NUM_ROWS: tl.constexpr, NUM_COLUMNS: tl.constexpr):
    """A ``(NUM_ROWS, NUM_COLUMNS)`` tile: element ``[r, c]`` is noise ``row_start[r] + column + c``.

    Needs every ``row_start[r] + column`` to be a multiple of 4 and ``NUM_COLUMNS % 4 == 0``,
    so each group of four columns is exactly the four lanes of one Philox call.
    """
    quads = tl.arange(0, NUM_COLUMNS // 4)
    counters = (row_start[:, None] + column) // 4 + quads[None, :]
    n0, n1, n2, n3 = tl.randn4x(seed, counters)
    # join stacks on a new last axis, so the outer join picks the fastest index: this
    # nesting lays the lanes out as n0, n1, n2, n3.
    lanes = tl.join(tl.join(n0, n2), tl.join(n1, n3))
    return tl.reshape(lanes, (NUM_ROWS, NUM_COLUMNS))


@triton.jit
def noise_rows_per_seed(
    seeds,
    row_start,
    NUM_SEEDS: tl.constexpr,
    NUM_ROWS: tl.constexpr,
    NUM_COLUMNS: tl.constexpr,
):
    """A ``(NUM_SEEDS, NUM_ROWS, NUM_COLUMNS)`` tile: ``[s, r, c]`` is noise ``row_start[r] + c``
    of ``seeds[s]`` (``seeds`` shaped ``(NUM_SEEDS, 1, 1)``).

    The same alignment rule as :func:`noise_rows`: every ``row_start[r]`` a multiple of 4
    and ``NUM_COLUMNS % 4 == 0``.
    """
    quads = tl.arange(0, NUM_COLUMNS // 4)
    counters = row_start[:, None] // 4 + quads[None, :]
    n0, n1, n2, n3 = tl.randn4x(seeds, counters[None, :, :])
    lanes = tl.join(tl.join(n0, n2), tl.join(n1, n3))
    return tl.reshape(lanes, (NUM_SEEDS, NUM_ROWS, NUM_COLUMNS))
