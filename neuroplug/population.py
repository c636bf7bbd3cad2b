"""The Population: members as ``bases[base_index[i]] + scale[i] * eps(seed[i])``.

Passing P full weight vectors around costs P x params memory and bandwidth; describing
each member by a base, a scale and a noise seed costs a few numbers per member, and any
backend can rebuild member i when (and where) it needs it — in chunks, or inside a kernel.

- ES: one base (the centre), ``scale = +/-sigma``, mirrored pairs share a seed.
- GA: the parents (and the elite with scale 0) as bases; a child adds sigma * eps(seed).
- Dense populations: every member is its own base with scale 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from neuroplug.lowrank import LowRank, perturbation_vectors
from neuroplug.noise import MAX_SEED


@dataclass
class Population:
    """A population of parameter vectors described by bases, scales and noise seeds."""

    bases: torch.Tensor
    """``(B, D)`` float32: the distinct base parameter vectors."""
    base_index: torch.Tensor
    """``(P,)`` int64: which base each member perturbs."""
    scale: torch.Tensor
    """``(P,)`` float32: the noise scale of each member (0 means the base itself)."""
    seed: torch.Tensor
    """``(P,)`` int64: the noise seed of each member, in ``[0, MAX_SEED]``."""
    lowrank: LowRank | None = None
    """When set, the listed weight matrices move by low-rank products built from the
    member's noise (EGGROLL; :mod:`neuroplug.lowrank`) instead of dense noise."""

    def __post_init__(self) -> None:
        size = len(self.base_index)
        if self.bases.dim() != 2:
            raise ValueError(
                f"bases must be (num_bases, num_params), got {tuple(self.bases.shape)}"
            )
        if len(self.scale) != size or len(self.seed) != size:
            raise ValueError(
                f"base_index, scale and seed must have one entry per member; got lengths "
                f"{size}, {len(self.scale)}, {len(self.seed)}"
            )
        if size and (
            int(self.base_index.min()) < 0 or int(self.base_index.max()) >= len(self.bases)
        ):
            raise ValueError(f"base_index must lie in [0, {len(self.bases)})")
        if size and (int(self.seed.min()) < 0 or int(self.seed.max()) > MAX_SEED):
            raise ValueError(f"seeds must lie in [0, {MAX_SEED}]")

    def __len__(self) -> int:
        return len(self.base_index)

    @property
    def num_params(self) -> int:
        """Parameters per member."""
        return self.bases.shape[1]

    @classmethod
    def dense(cls, members: torch.Tensor) -> Population:
        """A population whose members are the given ``(P, D)`` vectors themselves."""
        size = len(members)
        return cls(
            bases=members.float(),
            base_index=torch.arange(size, dtype=torch.int64),
            scale=torch.zeros(size, dtype=torch.float32),
            seed=torch.zeros(size, dtype=torch.int64),
        )

    def materialize(
        self,
        members: torch.Tensor | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        """The full parameter vectors of ``members`` (all by default): ``(n, D)``."""
        if members is None:
            members = torch.arange(len(self), dtype=torch.int64)
        members = members.to(torch.int64).cpu()
        device = self.bases.device if device is None else torch.device(device)
        bases = self.bases.to(device)
        params = bases[self.base_index[members].to(device)].clone()
        scale = self.scale[members]
        perturbed = torch.nonzero(scale != 0).flatten()
        if len(perturbed):
            eps = perturbation_vectors(
                self.seed[members][perturbed], self.num_params, self.lowrank, device=device
            )
            params[perturbed.to(device)] += scale[perturbed].to(device).unsqueeze(1) * eps
        return params.to(dtype)

    def to(self, device: torch.device | str) -> Population:
        """The same population with its bases on ``device`` (indices stay on the CPU)."""
        return Population(
            self.bases.to(device), self.base_index, self.scale, self.seed, self.lowrank
        )
