"""``algo=es``: OpenAI evolution strategies.

Salimans, Ho, Chen, Sidor & Sutskever (2017), "Evolution Strategies as a Scalable
Alternative to Reinforcement Learning", arXiv:1703.03864. Per generation::

    draw seeds s_1..s_{P/2};  members theta + sigma*eps(s_k) and theta - sigma*eps(s_k)
    evaluate every member -> returns F
    u = centered_ranks(F)                       # fitness shaping over the whole population
    g = 1/P * sum_k (u_k+ - u_k-) * eps(s_k)   # mirrored estimate; eps regenerated from s_k
    theta <- theta - Adam(-g + l2 * theta)      # or, optimizer=sgd: theta + lr (g - l2 theta)

The step itself (sampling, the mirrored estimate, Adam) is :class:`ESCenter` below, which
the novelty-search family (:mod:`neuroplug_algorithms.novelty_es`) shares: it keeps several
centers and weights their members by novelty and reward instead of fitness ranks.
Observation normalization and action noise are handled by the policy and scheduler
when ``obs_norm`` / ``action_noise`` are set. ``perturbation=lowrank`` perturbs the large
weight matrices by rank-``rank`` products instead (EGGROLL, Sarkar et al. 2025; see
:mod:`neuroplug.population.lowrank`); the update then sums those same perturbations.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.errors import ConfigError
from neuroplug.evolution import EvolutionAlgorithm, centered_ranks, weighted_noise_sums
from neuroplug.nets.network import Network
from neuroplug.optim.adam import FlatAdam
from neuroplug.population.lowrank import LowRank, lowrank_for
from neuroplug.population.members import Population, draw_seeds
from neuroplug_algorithms.es_config import ESConfig, ESStepConfig


def no_lowrank_matrix(network: Network, rank: int, min_size: int) -> tuple[str, str, str]:
    """(field, problem, allowed) of a low-rank run whose network has no matrix to factor:
    none of ``min_size`` entries or more, or none where rank-``rank`` factors are smaller
    than the matrix (``rank (rows + cols) <= rows x cols``)."""
    shapes = [slot.shape for slot in network.layout.slots.values() if len(slot.shape) in (2, 4)]
    if not shapes:
        return (
            "algo.perturbation",
            f"lowrank perturbs weight matrices, and {network.describe()} has none",
            "algo.perturbation=full, or a network with linear layers",
        )
    largest = max(shapes, key=lambda shape: shape[0] * (math.prod(shape) // shape[0]))
    rows, cols = largest[0], math.prod(largest) // largest[0]
    if rows * cols < min_size:
        return (
            "algo.lowrank_min_size",
            f"{min_size} leaves no matrix of {network.describe()} low-rank (its largest, "
            f"{rows} x {cols}, has {rows * cols} entries)",
            f"algo.lowrank_min_size={rows * cols} or less, or algo.perturbation=full",
        )
    return (
        "algo.rank",
        f"{rank} factors no matrix of {network.describe()} into fewer numbers than it has "
        f"(rank (rows + cols) > rows x cols; its largest is {rows} x {cols})",
        f"algo.rank of at most {rows * cols // (rows + cols)} (below min(rows, cols))",
    )


class ESCenter:
    """One ES search distribution: a center, its Adam state (none with ``sgd``) and the
    RNG of its seeds."""

    def __init__(
        self,
        config: ESStepConfig,
        center: torch.Tensor,
        rng: np.random.Generator,
        network: Network,
    ) -> None:
        self.config = config
        self.params = center.detach().clone().float()
        """The center: ``(D,)`` float32."""
        self.rng = rng
        adam = config.optimizer == "adam"
        self.optimizer = FlatAdam(self.params, config.learning_rate) if adam else None
        self.lowrank: LowRank | None = None
        if config.perturbation == "lowrank":
            self.lowrank = lowrank_for(network.layout, config.rank, config.lowrank_min_size)
            if not self.lowrank.matrices:
                raise ConfigError(*no_lowrank_matrix(network, config.rank, config.lowrank_min_size))

    def ask(self) -> Population:
        """``population_size`` members around the center (mirrored pairs share a seed)."""
        size, sigma = self.config.population_size, self.config.sigma
        if self.config.mirrored:
            seeds = draw_seeds(self.rng, size // 2).repeat_interleave(2)
            scale = torch.tensor([sigma, -sigma], dtype=torch.float32).repeat(size // 2)
        else:
            seeds = draw_seeds(self.rng, size)
            scale = torch.full((size,), sigma, dtype=torch.float32)
        return Population(
            bases=self.params.unsqueeze(0),
            base_index=torch.zeros(size, dtype=torch.int64),
            scale=scale,
            seed=seeds,
            lowrank=self.lowrank,
        )

    def step(self, population: Population, weights: np.ndarray) -> dict[str, float]:
        """Move the center along ``sum_i weights[i] * eps_i`` of a population from :meth:`ask`."""
        if self.config.mirrored:
            seeds = population.seed[0::2]
            weights = weights[0::2] - weights[1::2]
        else:
            seeds = population.seed
        gradient = self._weighted_noise_sum(seeds, torch.from_numpy(weights).float())
        gradient /= len(population)
        before = self.params.clone()
        if self.optimizer is None:  # plain gradient ascent: no state to keep
            self.params.add_(
                gradient - self.config.l2_coeff * self.params, alpha=self.config.learning_rate
            )
        else:
            self.optimizer.step(-gradient + self.config.l2_coeff * self.params)
        return {
            "gradient_norm": float(gradient.norm()),
            "update_ratio": float((before - self.params).norm() / (self.params.norm() + 1e-12)),
            "center_norm": float(self.params.norm()),
        }

    def _weighted_noise_sum(self, seeds: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """sum_k weights[k] * eps(seeds[k]) (:func:`~neuroplug.evolution.weighted_noise_sums`).

        eps is the members' perturbation direction: low-rank products where the
        population used them, so the update follows the directions that were evaluated.
        """
        return weighted_noise_sums(seeds, [(weights, 1)], len(self.params), self.lowrank)[0]

    def state_dict(self) -> dict[str, Any]:
        """Center and Adam state (the RNG belongs to whoever owns it); with ``sgd`` the
        center alone: a checkpoint of one model's size."""
        if self.optimizer is None:
            return {"center": self.params.clone()}
        return {"center": self.params.clone(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.params.copy_(state["center"])  # in place: the optimizer steps this tensor
        if self.optimizer is not None:
            if "optimizer" not in state:
                raise ConfigError(
                    "algo.optimizer", "adam, resuming a run whose checkpoint has no Adam state",
                    "algo.optimizer=sgd, as the run was started",
                )  # fmt: skip
            self.optimizer.load_state_dict(state["optimizer"])


class OpenAIES(EvolutionAlgorithm):
    """OpenAI ES with mirrored sampling, centered ranks, Adam and L2 decay."""

    config_class = ESConfig

    def __init__(self, config: ESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.search = ESCenter(config, context.initial_params, self.rng, context.network)

    @property
    def center(self) -> torch.Tensor:
        """The center of the search distribution (the deployed policy)."""
        return self.search.params

    def _ask(self) -> Population:
        return self.search.ask()

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        return self.search.step(population, self._shape(fitness))

    def _shape(self, fitness: np.ndarray) -> np.ndarray:
        if self.config.fitness_shaping == "centered_ranks":
            return centered_ranks(fitness)
        return (fitness - fitness.mean()) / (fitness.std() + 1e-8)

    def policy_params(self) -> torch.Tensor:
        return self.center.clone()

    def _state(self) -> dict[str, Any]:
        return self.search.state_dict()

    def _load_state(self, state: dict[str, Any]) -> None:
        self.search.load_state_dict(state)
