"""Fixed tiles: how the torch backend keeps a member's outputs independent of its batch.

A library's product or convolution may round a row differently with the call it is in:
BLAS may pick kernels by the call's shape, by its operands' alignment and by how many
items a batched call holds (on some CPUs a member's last bits moved with its company;
``docs/reproducibility.md``). No setting pins that from outside on
every CPU, so in tiles (``backend.batching=tiles``, and every low-rank population) the
torch backend never lets a member's call depend on its company. The population is cut
into tiles of ``T`` consecutive members, member ``m`` always at row ``m % T`` of tile
``m // T``, and every op runs on one whole tile: the tile's weights (a view of the same
rows every time), its inputs in a fresh ``(T, ...)`` buffer with zeros in the rows of
members that are not alive. Whatever else is alive, in whatever order, the calls that
compute a member are the same calls with the same shapes, strides and weight addresses,
so they give the same bits: the construction holds on any CPU whose libraries give the
same result for the same call, which is all that is assumed.

A member on two rows of one call (two episodes at once) takes the same row of a second
copy of its tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from neuroplug.nets.layers import CONV2D, is_recurrent

TILE_FLOPS = 32e6
"""Forward arithmetic per dense tile when ``backend.tile_rows`` is 0 (auto). A tile's call
costs a fixed overhead plus its members' arithmetic, and it computes its dead members
too, so a heavy network wants small tiles and a light one a single tile: the Nature CNN
(19 MFLOP a member) ran fastest in tiles of 2, a 256-256 MLP (0.14 MFLOP) as one tile at
every alive fraction (``benchmarks/results/batch_invariance.md``). This budget gives both
those tiles."""


def member_flops(network) -> float:
    """Floating-point operations of one member's products and convolutions on one
    observation (2 per multiply-add), read from its layer table. (Not PyTorch's flop
    counter: importing it imports Triton, which must not happen before a Triton user has
    chosen its interpreter.)"""
    layout = network.layout
    shape = tuple(network.example_inputs(1, torch.Generator().manual_seed(0)).shape[1:])
    flops = 0.0
    for layer in network.layers:
        weight = layout.slots[layer.weight].shape
        if layer.kind == CONV2D:
            left, right, top, bottom = layer.padding
            size = weight[-1]
            height = (shape[1] + top + bottom - size) // layer.stride + 1
            width = (shape[2] + left + right - size) // layer.stride + 1
            flops += 2.0 * weight[0] * weight[1] * size * size * height * width
            shape = (weight[0], height, width)
            continue
        flops += 2.0 * weight[0] * weight[1]
        if is_recurrent(layer.kind):
            recurrent = layout.slots[layer.recurrent_weight].shape
            flops += 2.0 * recurrent[0] * recurrent[1]
    return flops


def dense_tile_rows(population_size: int, flops: float, requested: int) -> int:
    """Members per tile: ``requested`` (at most the population), or, for 0, about
    :data:`TILE_FLOPS` of arithmetic (``flops`` a member), evened out so the last tile is
    not mostly empty."""
    if population_size <= 0:
        return 1
    most = requested or max(1, math.ceil(TILE_FLOPS / max(1.0, flops)))
    most = min(most, population_size)
    tiles = -(-population_size // most)
    return -(-population_size // tiles)


@dataclass(frozen=True)
class Placement:
    """Where the rows of one call go: ``len(tiles)`` tile-shaped blocks, block ``i`` a copy
    of tile ``tiles[i]``, and call row ``j`` at row ``rows[j]`` of the blocks laid end to
    end (``(len(tiles) * T,)`` rows)."""

    tiles: list[int]
    rows: torch.Tensor

    def scatter(self, values: torch.Tensor, tile_rows: int) -> torch.Tensor:
        """``values`` ``(n, ...)`` at their places in fresh zeroed blocks ``(blocks, T, ...)``."""
        blocks = values.new_zeros((len(self.tiles) * tile_rows, *values.shape[1:]))
        blocks.index_copy_(0, self.rows.to(values.device), values)
        return blocks.view(len(self.tiles), tile_rows, *values.shape[1:])

    def gather(self, blocks: torch.Tensor) -> torch.Tensor:
        """The call's rows ``(n, ...)`` from the blocks' outputs ``(blocks * T, ...)``."""
        return blocks[self.rows.to(blocks.device)]


def place(members: torch.Tensor, tile_rows: int, num_tiles: int) -> Placement:
    """The placement of ``members`` (one entry per call row) among tiles of ``tile_rows``."""
    members = members.cpu().to(torch.int64)
    padded = num_tiles * tile_rows
    virtual = copy_index(members) * padded + members
    tile_ids, block = torch.unique(
        torch.div(virtual, tile_rows, rounding_mode="floor"), return_inverse=True
    )
    rows = block * tile_rows + virtual % tile_rows
    return Placement((tile_ids % num_tiles).tolist(), rows)


def copy_index(members: torch.Tensor) -> torch.Tensor:
    """For each entry, how many earlier entries name the same member."""
    if len(torch.unique(members)) == len(members):
        return torch.zeros_like(members)
    order = torch.argsort(members, stable=True)
    _, counts = torch.unique_consecutive(members[order], return_counts=True)
    run_start = torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts)
    copies = torch.empty_like(members)
    copies[order] = torch.arange(len(members)) - run_start
    return copies
