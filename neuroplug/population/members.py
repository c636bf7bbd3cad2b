"""The Population: members described, not stored.

Member ``i`` of a population is::

    theta_i = bases[base_index[i]] + scale[i] * (sigma[base_index[i]] ⊙ eps(seed[i]))

where ``eps`` is the counter-based noise of :mod:`neuroplug.population.noise` (the same numbers on
CPU, CUDA and inside a Triton kernel) and ``sigma`` (a per-base, per-parameter std) is
optional: without it the direction is ``eps`` itself. Passing P full weight vectors costs
``P x params`` memory and bandwidth; this form costs a few numbers per member plus the
bases, and any backend rebuilds member i when (and where) it needs it — in chunks, or
inside a kernel.

- ES: one base (the center), ``scale = ±sigma``; mirrored pairs share a seed.
- GA: the parents (and the elite, scale 0) as bases; a child adds ``sigma * eps(seed)``.
- SNES, PGPE, separable CMA-ES: one base (the mean) with its ``sigma`` vector, scale 1.
- Fresh draws from the network's initialisation (GA generation 0, random search): the
  bases themselves are seeds (:class:`InitDraws`), built only where a backend needs them.
- Dense populations (anything else): every member its own base with scale 0.

What it costs: ``bases`` and ``sigma`` are ``B x D`` floats, everything else ``O(P)``. A
backend that materialises the whole population holds ``P x D`` floats while it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from neuroplug.population.lowrank import LowRank, perturbation_vectors
from neuroplug.population.noise import MAX_SEED

Initializer = Callable[[int], torch.Tensor]
"""Maps a seed to a fresh ``(D,)`` draw from the network's initialisation distribution."""


def draw_seeds(rng: np.random.Generator, count: int) -> torch.Tensor:
    """``count`` noise seeds in ``[0, MAX_SEED]`` from ``rng``, as an int64 tensor."""
    return torch.from_numpy(rng.integers(0, MAX_SEED, size=count, endpoint=True).astype(np.int64))


@dataclass(frozen=True)
class InitDraws:
    """Bases described by seeds: row k is ``initializer(seeds[k])``, built on demand."""

    seeds: torch.Tensor
    """``(B,)`` int64 init seeds."""
    initializer: Initializer
    """The network's initialisation (:meth:`neuroplug.api.AlgorithmContext.fresh_params`)."""
    num_params: int

    def __len__(self) -> int:
        return len(self.seeds)

    def rows(self, index: torch.Tensor, device: torch.device | str = "cpu") -> torch.Tensor:
        """``(len(index), D)``: the draws of bases ``index``, each distinct one built once."""
        unique, inverse = torch.unique(index.cpu(), return_inverse=True)
        built = torch.empty(len(unique), self.num_params)
        # Row by row, so building never holds a second copy of a big population.
        for row, base in enumerate(unique.tolist()):
            built[row] = self.initializer(int(self.seeds[base])).float()
        return built.to(device)[inverse.to(device)]

    def subset(self, used: torch.Tensor) -> InitDraws:
        """The draws of bases ``used``, in that order."""
        return replace(self, seeds=self.seeds[used])


@dataclass(frozen=True)
class BaseOrigin:
    """Where a population's bases came from: base ``k`` is member ``members[k]`` of
    ``population`` (the deep GA's parents are members of the previous generation).

    Optional, and never needed to build a member; a scheduler that ships populations to
    other processes sends this reference (O(B) numbers) instead of ``B x D`` weights to
    workers that still hold ``population``. ``population`` carries no origin of its own,
    so references never chain back through the generations.
    """

    population: Population
    members: torch.Tensor
    """``(B,)`` int64 member indices into ``population``."""


@dataclass
class Population:
    """A population of parameter vectors described by bases, scales and noise seeds."""

    bases: torch.Tensor | InitDraws
    """``(B, D)`` float32 base parameter vectors, or fresh init draws described by seeds."""
    base_index: torch.Tensor
    """``(P,)`` int64: which base each member perturbs."""
    scale: torch.Tensor
    """``(P,)`` float32: the noise scale of each member (0 means the base itself)."""
    seed: torch.Tensor
    """``(P,)`` int64: the noise seed of each member, in ``[0, MAX_SEED]``."""
    lowrank: LowRank | None = None
    """When set, the listed weight matrices move by low-rank products built from the
    member's noise (EGGROLL; :mod:`neuroplug.population.lowrank`) instead of dense noise."""
    sigma: torch.Tensor | None = None
    """``(B, D)`` float32 per-parameter std of each base's noise (diagonal Gaussians:
    SNES, PGPE, separable CMA-ES); None means 1 everywhere."""
    origin: BaseOrigin | None = None
    """Optional: the bases are members of an earlier population (see :class:`BaseOrigin`)."""

    def __post_init__(self) -> None:
        size = len(self.base_index)
        if self.origin is not None and len(self.origin.members) != self.num_bases:
            raise ValueError(
                f"origin names {len(self.origin.members)} members for {self.num_bases} bases"
            )
        if isinstance(self.bases, torch.Tensor) and self.bases.dim() != 2:
            raise ValueError(
                f"bases must be (num_bases, num_params), got {tuple(self.bases.shape)}"
            )
        if len(self.scale) != size or len(self.seed) != size:
            raise ValueError(
                f"base_index, scale and seed must have one entry per member; got lengths "
                f"{size}, {len(self.scale)}, {len(self.seed)}"
            )
        if size and (
            int(self.base_index.min()) < 0 or int(self.base_index.max()) >= self.num_bases
        ):
            raise ValueError(f"base_index must lie in [0, {self.num_bases})")
        if size and (int(self.seed.min()) < 0 or int(self.seed.max()) > MAX_SEED):
            raise ValueError(f"seeds must lie in [0, {MAX_SEED}]")
        if self.sigma is not None and tuple(self.sigma.shape) != (self.num_bases, self.num_params):
            raise ValueError(
                f"sigma must be (num_bases, num_params) = ({self.num_bases}, {self.num_params}), "
                f"got {tuple(self.sigma.shape)}"
            )

    def __len__(self) -> int:
        return len(self.base_index)

    @property
    def num_params(self) -> int:
        """Parameters per member."""
        if isinstance(self.bases, InitDraws):
            return self.bases.num_params
        return self.bases.shape[1]

    @property
    def num_bases(self) -> int:
        """Distinct bases (B)."""
        return len(self.bases)

    # ------------------------------------------------------------------ construction

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

    @classmethod
    def fresh(cls, seeds: torch.Tensor, initializer: Initializer, num_params: int) -> Population:
        """One member per seed, a fresh draw ``initializer(seed)`` (described, not built)."""
        size = len(seeds)
        return cls(
            bases=InitDraws(seeds.to(torch.int64), initializer, num_params),
            base_index=torch.arange(size, dtype=torch.int64),
            scale=torch.zeros(size, dtype=torch.float32),
            seed=torch.zeros(size, dtype=torch.int64),
        )

    def subset(self, members: torch.Tensor | np.ndarray) -> Population:
        """The given members, in that order, carrying only the bases they use."""
        index = torch.as_tensor(np.asarray(members, dtype=np.int64))
        used, base_index = torch.unique(self.base_index[index], return_inverse=True)
        bases = self.bases.subset(used) if isinstance(self.bases, InitDraws) else self.bases[used]
        origin = self.origin
        if origin is not None:
            origin = BaseOrigin(origin.population, origin.members[used])
        return Population(
            bases,
            base_index,
            self.scale[index],
            self.seed[index],
            self.lowrank,
            None if self.sigma is None else self.sigma[used],
            origin,
        )

    @classmethod
    def joined(cls, populations: list[Population]) -> Population:
        """The populations' members one after another (the first's, then the second's, ...),
        each described as before: bases side by side, each population's ``base_index``
        shifted past the bases before it. Fresh draws stay seeds where every population is
        one of one initializer; otherwise the draws are built. All that perturb their
        members must perturb alike (the same ``lowrank``); a population without ``sigma``
        gets ones."""
        lowranks = {p.lowrank for p in populations if bool((p.scale != 0).any())}
        if len(lowranks) > 1:
            raise ValueError("populations joined must share their low-rank perturbation")
        offsets = np.cumsum([0] + [population.num_bases for population in populations[:-1]])
        base_index = torch.cat(
            [p.base_index + int(offset) for p, offset in zip(populations, offsets, strict=True)]
        )
        draws = [p.bases for p in populations if isinstance(p.bases, InitDraws)]
        if len(draws) == len(populations) and len({id(d.initializer) for d in draws}) == 1:
            bases: torch.Tensor | InitDraws = replace(
                draws[0], seeds=torch.cat([d.seeds for d in draws])
            )
        else:
            bases = torch.cat([p.base_params().float().cpu() for p in populations])
        sigma = None
        if any(p.sigma is not None for p in populations):
            sigma = torch.cat(
                [
                    torch.ones(p.num_bases, p.num_params) if p.sigma is None else p.sigma.cpu()
                    for p in populations
                ]
            )
        return cls(
            bases,
            base_index,
            torch.cat([p.scale for p in populations]),
            torch.cat([p.seed for p in populations]),
            lowranks.pop() if lowranks else None,
            sigma,
        )

    # ------------------------------------------------------------------ building members

    def base_params(self, device: torch.device | str | None = None) -> torch.Tensor:
        """The ``(B, D)`` base vectors on ``device`` (init draws are built here)."""
        if isinstance(self.bases, InitDraws):
            index = torch.arange(self.num_bases)
            return self.bases.rows(index, "cpu" if device is None else device)
        return self.bases if device is None else self.bases.to(device)

    def materialize(
        self,
        members: torch.Tensor | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        """The full parameter vectors of ``members`` (all by default): ``(n, D)``.

        This is the definition of a member; every backend builds exactly these numbers.
        """
        if members is None:
            members = torch.arange(len(self), dtype=torch.int64)
        members = members.to(torch.int64).cpu()
        if device is None:
            device = "cpu" if isinstance(self.bases, InitDraws) else self.bases.device
        device = torch.device(device)
        base_index = self.base_index[members]
        if isinstance(self.bases, InitDraws):
            params = self.bases.rows(base_index, device)
        else:
            params = self.bases.to(device)[base_index.to(device)].clone()
        scale = self.scale[members]
        perturbed = torch.nonzero(scale != 0).flatten()
        if len(perturbed):
            direction = perturbation_vectors(
                self.seed[members][perturbed], self.num_params, self.lowrank, device=device
            )
            if self.sigma is not None:
                direction *= self.sigma.to(device)[base_index[perturbed].to(device)]
            params[perturbed.to(device)] += scale[perturbed].to(device).unsqueeze(1) * direction
        return params.to(dtype)

    def to(self, device: torch.device | str) -> Population:
        """The same population with its bases and sigma on ``device`` (indices stay on the
        CPU; init draws are built where they are used)."""
        bases = self.bases if isinstance(self.bases, InitDraws) else self.bases.to(device)
        sigma = None if self.sigma is None else self.sigma.to(device)
        return replace(self, bases=bases, sigma=sigma)
