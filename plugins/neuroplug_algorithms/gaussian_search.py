"""What the Gaussian search strategies share (``cma_es``, ``sep_cma_es``, ``pgpe``,
``snes``, ``xnes``): drawing a population from a search distribution, the standard normal
directions behind it, the orderings and weights of the papers, and their common base.

Each strategy's math lives in the module named after it; this one holds only what two or
more of them do the same way.

A diagonal distribution (sep-CMA-ES, SNES, PGPE) is a :class:`~neuroplug.population.members.Population`
as it stands: one base (the mean), its per-parameter std ``sigma``, a seed and a scale of
±1 per member, so no member is materialised before a backend runs it and the update
regenerates each member's direction ``z`` from its seed. A full covariance (CMA-ES, xNES)
correlates the parameters: its members are materialised, ``(P, D)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext
from neuroplug.errors import ConfigError
from neuroplug.evolution import EvolutionAlgorithm, weighted_noise_sums
from neuroplug.population.members import Population
from neuroplug.population.noise import noise_vectors


def default_population_size(dimension: int) -> int:
    """``4 + floor(3 ln D)``: CMA-ES's, SNES's and xNES's default (Hansen 2016, Table 1;
    Schaul et al. 2011)."""
    return 4 + int(math.floor(3 * math.log(dimension)))


def best_first(fitness: np.ndarray) -> np.ndarray:
    """Member indices from the highest fitness down (the papers minimise; we maximise
    returns), ties broken by index so a run repeats."""
    return np.argsort(-fitness, kind="stable")


def recombination_weights(size: int, parents: int) -> np.ndarray:
    """CMA's positive weights ``w_i ∝ ln((λ+1)/2) - ln i`` for the ``parents`` best of
    ``size``, summing to one (Hansen 2016, eq. 49 without the negative weights)."""
    raw = math.log((size + 1) / 2) - np.log(np.arange(1, parents + 1))
    return raw / raw.sum()


def nes_utilities(size: int) -> np.ndarray:
    """The NES fitness shaping of the best-first ranks ``k = 1..λ`` (Wierstra et al. 2014,
    eq. 9): ``max(0, ln(λ/2 + 1) - ln k)`` normalised to sum one, minus ``1/λ``."""
    raw = np.maximum(0.0, math.log(size / 2 + 1) - np.log(np.arange(1, size + 1)))
    return raw / raw.sum() - 1.0 / size


def directions(seeds: torch.Tensor, dimension: int) -> torch.Tensor:
    """The standard normal ``z`` ``(len(seeds), D)`` of the given noise seeds (the same
    numbers every backend builds the members from)."""
    return noise_vectors(seeds, dimension)


def weighted_directions(seeds: torch.Tensor, weights: torch.Tensor, dimension: int):
    """``sum_k weights[k] * z_k`` and ``sum_k weights[k] * z_k**2`` over the members'
    seeds (:func:`~neuroplug.evolution.weighted_noise_sums`): ``(D,)`` float64 each."""
    first, second = weighted_noise_sums(
        seeds, [(weights, 1), (weights, 2)], dimension, dtype=torch.float64
    )
    return first, second


def diagonal_population(
    mean: torch.Tensor, std: torch.Tensor, seeds: torch.Tensor, signs: torch.Tensor
) -> Population:
    """Members ``mean + signs[i] * std ⊙ z(seeds[i])``, described (not built): one base
    and its per-parameter std."""
    size = len(seeds)
    return Population(
        bases=mean.float().unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=signs.float(),
        seed=seeds,
        sigma=std.float().unsqueeze(0),
    )


class GaussianStrategy(EvolutionAlgorithm):
    """The base of the Gaussian search strategies: the population size resolved from the
    dimension (``algo.population_size=0``; the config checks a set one against the
    strategy's minimum), and the deployed policy being the distribution's mean."""

    def __init__(self, config: Any, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.population_size = config.population_size or default_population_size(self.num_params)

    def refuse_full_covariance_above(self, limit: int) -> None:
        """Refuse a dimension whose ``D x D`` matrices would not fit, naming the diagonal
        strategies that do (``algo.max_dimension`` raises the limit)."""
        if self.num_params <= limit:
            return
        gigabytes = 3 * self.num_params**2 * 8 / 2**30
        raise ConfigError(
            "algo.max_dimension",
            f"{self.config.name} keeps a full {self.num_params:,} x {self.num_params:,} "
            f"covariance: about {gigabytes:,.1f} GB and an O(D^3) decomposition, above the "
            f"limit of {limit:,} parameters",
            "algo=sep_cma_es or algo=snes (per-parameter std, O(D)), a smaller net, or "
            f"algo.max_dimension >= {self.num_params} if the machine holds it",
        )

    def policy_params(self) -> torch.Tensor:
        return self.mean.float().clone()

    @property
    def mean(self) -> torch.Tensor:
        """The search distribution's mean (the deployed policy)."""
        raise NotImplementedError
