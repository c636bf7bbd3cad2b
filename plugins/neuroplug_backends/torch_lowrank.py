"""The torch backend's MLP forward for low-rank populations, with the factors kept apart.

For a weight matrix perturbed by a low-rank product (EGGROLL, :mod:`neuroplug.lowrank`),
member i's layer is ``x (W_b + c_i A_i B_iᵀ) = x W_b + ((x (c_i A_i)) B_iᵀ``: the base matrix
``W_b`` is shared by every member of base b, and a member's own work is ``rank x (rows +
cols)`` numbers instead of ``rows x cols``. The shared product runs as a batched multiply
over a stride-0 view of ``W_b``, one small matrix product per row, so each member's
outputs do not depend on which other members share the batch (the schedulers' identical
results rely on that). Biases and matrices kept full-rank come from the materialised
parameters as before.
"""

from __future__ import annotations

import math

import torch

from neuroplug.nets.mlp import MLP
from neuroplug.noise import noise_vectors
from neuroplug.population import Population


class FactoredLowRankMLP:
    """Forward passes of an MLP population whose big matrices move by low-rank products."""

    def __init__(self, network: MLP, population: Population, params: torch.Tensor) -> None:
        """``population`` on the target device with ``lowrank`` set; ``params`` its
        materialised ``(P, D)`` parameters (read only for the full-rank tensors)."""
        lowrank = population.lowrank
        device = params.device
        self.network = network
        self.params = params
        self.base_index = population.base_index.to(device)
        self.num_bases = population.num_bases
        bases = population.base_params(device)
        rank = lowrank.rank
        perturbed = torch.nonzero(population.scale != 0).flatten()
        coefficient = (population.scale[perturbed] / math.sqrt(rank)).to(device)
        self.base_matrices: dict[int, torch.Tensor] = {}
        self.factor_a: dict[int, torch.Tensor] = {}
        self.factor_b: dict[int, torch.Tensor] = {}
        for matrix in lowrank.matrices:
            start, rows, cols = matrix.offset, matrix.rows, matrix.cols
            self.base_matrices[start] = bases[:, start : start + rows * cols].reshape(
                self.num_bases, rows, cols
            )
            factor_a = torch.zeros((len(population), rows, rank), device=device)
            factor_b = torch.zeros((len(population), cols, rank), device=device)
            if len(perturbed):
                # A member's factors are its noise slice, as in neuroplug.lowrank; the scale
                # goes into A so the forward pass needs no extra multiply.
                noise = noise_vectors(
                    population.seed[perturbed],
                    population.num_params,
                    start,
                    start + (rows + cols) * rank,
                    device=device,
                )
                a = noise[:, : rows * rank].reshape(-1, rows, rank)
                factor_a[perturbed.to(device)] = a * coefficient.view(-1, 1, 1)
                factor_b[perturbed.to(device)] = noise[:, rows * rank :].reshape(-1, cols, rank)
            self.factor_a[start] = factor_a
            self.factor_b[start] = factor_b

    def _slice(self, members: torch.Tensor, name: str) -> torch.Tensor:
        """Tensor ``name`` of ``members`` from the materialised parameters (slice, then gather)."""
        slot = self.network.layout.slots[name]
        values = self.params[:, slot.offset : slot.offset + slot.size][members]
        return values.reshape(len(members), *slot.shape)

    def _shared_product(self, members: torch.Tensor, hidden: torch.Tensor, start: int):
        """``hidden[j] @ W_{base of members[j]}`` for every row, base matrices read in place."""
        rows, cols = self.base_matrices[start].shape[1:]
        if self.num_bases == 1:
            return torch.bmm(hidden, self.base_matrices[start][0].expand(len(members), rows, cols))
        out = hidden.new_empty((len(members), 1, cols))
        bases = self.base_index[members]
        for base in torch.unique(bases).tolist():
            picked = torch.nonzero(bases == base).flatten()
            shared = self.base_matrices[start][base].expand(len(picked), rows, cols)
            out[picked] = torch.bmm(hidden[picked], shared)
        return out

    def forward(self, members: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)`` of ``members[j]`` on ``inputs[j]``."""
        members = members.to(self.params.device)
        hidden = inputs.reshape(len(inputs), 1, -1).to(self.params.dtype)
        layout = self.network.layout
        for layer in range(self.network.num_layers):
            bias = self._slice(members, f"b{layer}").unsqueeze(1)
            start = layout.slots[f"w{layer}"].offset
            if start in self.base_matrices:
                low = torch.bmm(hidden, self.factor_a[start][members])
                hidden = (
                    self._shared_product(members, hidden, start)
                    + torch.bmm(low, self.factor_b[start][members].transpose(1, 2))
                    + bias
                )
            else:
                hidden = torch.baddbmm(bias, hidden, self._slice(members, f"w{layer}"))
            if layer < self.network.num_layers - 1:
                hidden = self.network.activation(hidden)
        return hidden.squeeze(1)
