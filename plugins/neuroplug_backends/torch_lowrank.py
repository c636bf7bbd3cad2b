"""The torch backend's forward for low-rank populations, with the factors kept apart.

For a weight matrix perturbed by a low-rank product (EGGROLL, :mod:`neuroplug.population.lowrank`),
member i's layer is ``x (W_b + c_i A_i B_iᵀ) = x W_b + (x (c_i A_i)) B_iᵀ``: the base
matrix ``W_b`` is shared by every member of base b, so ``x W_b`` is one matrix product for
all of them, and a member's own work is ``rank x (rows + cols)`` numbers instead of
``rows x cols``. A convolution kernel ``(out, in, kh, kw)`` is the matrix ``(out, in*kh*kw)``,
so ``conv(x, W_b + c_i A_i B_iᵀ)`` is the shared convolution plus the member's ``rank``
filters ``B_i`` mixed back to ``out`` channels by ``c_i A_i``. Biases and the tensors kept
full-rank are built per member from the bases and the noise for those slots alone: the
population is never materialised as ``P x D``.

**Fixed tiles** (:mod:`neuroplug_backends.tiles`): member m always at row ``m % tile_rows``
of tile ``m // tile_rows``, and every op runs on one whole tile, so a member's outputs do
not depend on what else is alive (the schedulers' identical results and bit-identical
resume rely on that). Bigger tiles cost fewer calls per step; smaller ones compute fewer
dead rows once most episodes have ended.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from neuroplug.nets.layers import (
    ACTIVATIONS,
    CONV2D,
    FEEDFORWARD_KINDS,
    fan_in,
    kernel_size,
    onednn_convolutions,
    out_channels,
    thread_count_invariant_convolutions,
)
from neuroplug.nets.network import Network
from neuroplug.population.members import Population
from neuroplug.population.noise import noise_vectors
from neuroplug_backends.tiles import place

LOWRANK_TILE_ROWS = 128
"""Members per tile when ``backend.tile_rows`` is 0 (auto): small tiles pay per-call
overhead, most on 2 threads (``benchmarks/results/lowrank_inference.md``)."""


def supports(network: Network) -> bool:
    """Whether :class:`FactoredLowRank` can run this architecture: it reads the network's
    layer table, so any network that has one of the feed-forward kinds (a recurrent core's
    population is materialised instead, as is one with virtual batch norm, whose members'
    weights are each scaled by their own statistics, and one reading measurements beside
    its pixels, whose join its tiles do not run)."""
    return (
        bool(network.layers)
        and not network.normalized
        and all(
            layer.kind in FEEDFORWARD_KINDS and not layer.measurements for layer in network.layers
        )
    )


class _LowRankSlot:
    """A weight tensor moving by low-rank products: the bases' matrices and each
    member's factors, both stored ``(rank, ·)``, ``A`` scaled by ``scale / sqrt(rank)``."""

    def __init__(self, shared: torch.Tensor, factor_at: torch.Tensor, factor_bt: torch.Tensor):
        self.shared = shared
        """``(B, rows, cols)``."""
        self.factor_at = factor_at
        """``(tiles, tile_rows, rank, rows)``."""
        self.factor_bt = factor_bt
        """``(tiles, tile_rows, rank, cols)``."""


class FactoredLowRank:
    """Forward passes of a population whose big tensors move by low-rank products, in
    fixed tiles of members (see the module docstring), layer by layer as the network's
    table lists them."""

    def __init__(
        self, network: Network, population: Population, device: torch.device, tile_rows: int
    ) -> None:
        """``population`` with ``lowrank`` set and no ``sigma``."""
        if population.lowrank is None or population.sigma is not None:
            raise ValueError("FactoredLowRank needs a low-rank population without sigma")
        self.network = network
        self.device = device
        self.tile_rows = tile_rows
        self.size = len(population)
        self.num_tiles = max(1, math.ceil(self.size / tile_rows))
        padded = self.num_tiles * tile_rows
        self.num_bases = population.num_bases
        # Padding rows belong to the last member's base, so they never add a base to a tile.
        base_index = population.base_index.clone()
        if padded > self.size:
            filler = base_index[-1:] if self.size else torch.zeros(1, dtype=torch.int64)
            base_index = torch.cat([base_index, filler.expand(padded - self.size)])
        self.row_base = base_index.view(self.num_tiles, tile_rows).to(device)
        scale = torch.zeros(padded)
        scale[: self.size] = population.scale
        seed = torch.zeros(padded, dtype=torch.int64)
        seed[: self.size] = population.seed
        perturbed = torch.nonzero(scale != 0).flatten()
        bases = population.base_params(device)
        lowrank = population.lowrank
        self.lowrank_slots: dict[str, _LowRankSlot] = {}
        self.member_tensors: dict[str, torch.Tensor] = {}
        for name, slot in network.layout.slots.items():
            stop = slot.offset + slot.size
            matrix = lowrank.matrix_at(slot.offset)
            if matrix is not None:
                self.lowrank_slots[name] = self._factors(
                    bases[:, slot.offset : stop], matrix.rows, matrix.cols, lowrank.rank,
                    slot.offset, population.num_params, seed[perturbed], scale[perturbed],
                    perturbed, padded,
                )  # fmt: skip
                continue
            # Built exactly as Population.materialize builds these entries.
            values = bases[:, slot.offset : stop][base_index.to(device)].clone()
            if len(perturbed):
                noise = noise_vectors(
                    seed[perturbed], population.num_params, slot.offset, stop, device=device
                )
                values[perturbed.to(device)] += scale[perturbed].to(device).unsqueeze(1) * noise
            self.member_tensors[name] = values.view(self.num_tiles, tile_rows, *slot.shape)

    def _factors(
        self, shared, rows, cols, rank, offset, num_params, seeds, scales, perturbed, padded
    ) -> _LowRankSlot:
        """A low-rank slot's factors, read from each member's noise as in neuroplug.population.lowrank."""
        device = self.device
        factor_at = torch.zeros((padded, rank, rows), device=device)
        factor_bt = torch.zeros((padded, rank, cols), device=device)
        if len(perturbed):
            noise = noise_vectors(
                seeds, num_params, offset, offset + (rows + cols) * rank, device=device
            )
            coefficient = (scales / math.sqrt(rank)).to(device).view(-1, 1, 1)
            # The scale goes into A, so the forward pass needs no extra multiply.
            index = perturbed.to(device)
            factor_a = noise[:, : rows * rank].reshape(-1, rows, rank) * coefficient
            factor_at[index] = factor_a.transpose(1, 2)
            factor_bt[index] = noise[:, rows * rank :].reshape(-1, cols, rank).transpose(1, 2)
        tiles, tile_rows = self.num_tiles, self.tile_rows
        return _LowRankSlot(
            shared.reshape(self.num_bases, rows, cols),
            factor_at.view(tiles, tile_rows, rank, rows),
            factor_bt.view(tiles, tile_rows, rank, cols),
        )

    # ------------------------------------------------------------------ tiles

    def forward(self, members: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)`` of ``members[j]`` on ``inputs[j]``."""
        members = members.cpu().to(torch.int64)
        tile_rows, padded = self.tile_rows, self.num_tiles * self.tile_rows
        inputs = inputs.to(self.device)
        if len(members) == 0:
            return torch.zeros((0, self.network.output_size), device=self.device)
        if len(members) == padded and bool((members == torch.arange(padded)).all()):
            # Everyone, in order: the inputs are the tiles already.
            batch = inputs.view(self.num_tiles, tile_rows, *inputs.shape[1:])
            return torch.cat([self._tile(tile, batch[tile]) for tile in range(self.num_tiles)])
        placement = place(members, tile_rows, self.num_tiles)
        batch = placement.scatter(inputs, tile_rows)
        out = torch.cat([self._tile(tile, batch[i]) for i, tile in enumerate(placement.tiles)])
        return placement.gather(out)

    def _tile(self, tile: int, inputs: torch.Tensor) -> torch.Tensor:
        """The ``(T, out)`` outputs of tile ``tile``'s members on ``inputs`` ``(T, ...)``.

        Every call has the same shapes whatever the tile, which is the point: a product
        run twice on the same shapes rounds the same way.
        """
        layout = self.network.layout
        hidden = inputs.float()
        if inputs.dtype == torch.uint8:
            hidden = hidden.div_(255.0)
        for layer in self.network.layers:
            if layer.kind == CONV2D:
                with thread_count_invariant_convolutions(hidden.device):
                    if layer.padded:
                        hidden = F.pad(hidden, layer.padding)
                    channels = out_channels(layout, layer)
                    kernel = kernel_size(layout, layer)
                    hidden = self._conv(tile, hidden, layer.weight, channels, kernel, layer.stride)
                    bias = self.member_tensors[layer.bias][tile]
                    hidden = hidden.add_(bias.view(*bias.shape, 1, 1))
            else:
                hidden = hidden.reshape(self.tile_rows, fan_in(layout, layer))
                hidden = self._linear(tile, hidden, layer.weight, layer.bias)
            hidden = ACTIVATIONS[layer.activation](hidden)
        return hidden

    # ------------------------------------------------------------------ layers

    def _linear(self, tile: int, hidden: torch.Tensor, weight: str, bias: str) -> torch.Tensor:
        """``hidden`` ``(T, K)`` through weight slot ``weight`` plus ``bias``: ``(T, N)``."""
        biases = self.member_tensors[bias][tile]
        if weight in self.member_tensors:
            weights = self.member_tensors[weight][tile]
            return torch.baddbmm(biases.unsqueeze(1), hidden.unsqueeze(1), weights).squeeze(1)
        slot = self.lowrank_slots[weight]
        if self.num_bases == 1:
            out = torch.addmm(biases, hidden, slot.shared[0])
        else:
            out = self._shared(tile, hidden, slot.shared, torch.mm) + biases
        # The member's own term: (x (c A)) Bᵀ, added by the same call that multiplies by B.
        low = torch.linalg.vecdot(slot.factor_at[tile], hidden.unsqueeze(1))
        out = torch.baddbmm(out.unsqueeze(1), low.unsqueeze(1), slot.factor_bt[tile])
        return out.squeeze(1)

    def _shared(self, tile: int, hidden: torch.Tensor, shared: torch.Tensor, product):
        """Each row of the tile through its base's shared tensor: ``product(hidden, base
        tensor)`` on the whole tile, once per base present (other bases' rows discarded)."""
        row_base = self.row_base[tile]
        bases = torch.unique(row_base).tolist()
        out = product(hidden, shared[bases[0]])
        for base in bases[1:]:
            keep = (row_base == base).view(-1, *[1] * (out.dim() - 1))
            out = torch.where(keep, product(hidden, shared[base]), out)
        return out

    def _conv(self, tile, hidden, name, out_channels, kernel, stride) -> torch.Tensor:
        """One tile's ``(T, C, H, W)`` through conv slot ``name`` (no bias)."""
        tile_rows, channels = hidden.shape[:2]
        grouped = hidden.reshape(1, tile_rows * channels, *hidden.shape[2:])
        if name in self.member_tensors:
            weights = self.member_tensors[name][tile]
            weights = weights.reshape(tile_rows * out_channels, channels, kernel, kernel)
            out = F.conv2d(grouped, weights, stride=stride, groups=tile_rows)
            return out.view(tile_rows, out_channels, *out.shape[2:])
        slot = self.lowrank_slots[name]
        rank = slot.factor_bt.shape[2]
        # The member's rank filters B_i, then c_i A_i mixing them back to out_channels.
        filters = slot.factor_bt[tile].reshape(tile_rows * rank, channels, kernel, kernel)
        low = F.conv2d(grouped, filters, stride=stride, groups=tile_rows)
        size = low.shape[2:]
        kernels = slot.shared.view(self.num_bases, out_channels, channels, kernel, kernel)

        def convolve(batch: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            # One ordinary convolution over the tile, in oneDNN on a CPU: its grouped kernels
            # round with the thread count, but this plain one gave the same bits at 1-3
            # threads (tests/runtime/test_devices.py), and ATen's native kernel (NNPACK for a batch)
            # took 1.6-2.1x as long (benchmarks/results/lowrank_inference.md).
            with onednn_convolutions(batch.device, enabled=True):
                return F.conv2d(batch, weight, stride=stride).flatten(2)

        shared = self._shared(tile, hidden, kernels, convolve)
        mix = slot.factor_at[tile].transpose(1, 2)
        out = torch.baddbmm(shared, mix, low.view(tile_rows, rank, -1))
        return out.view(tile_rows, out_channels, *size)
