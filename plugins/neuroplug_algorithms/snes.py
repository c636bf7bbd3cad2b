"""``algo=snes``: separable natural evolution strategies.

Schaul, Glasmachers & Schmidhuber (2011), "High Dimensions and Heavy Tails for Natural
Evolution Strategies", Algorithm 2 (and Wierstra et al. 2014, JMLR 15, Algorithm 6). Per
generation, for a diagonal Gaussian N(mu, diag(sigma)^2)::

    s_k ~ N(0, I);  z_k = mu + sigma ⊙ s_k                          k = 1..lambda
    evaluate, sort;  u_k the NES utilities of the ranks (best first)
    grad_mu    = sum_k u_k s_k
    grad_sigma = sum_k u_k (s_k^2 - 1)
    mu    <- mu + eta_mu sigma ⊙ grad_mu
    sigma <- sigma ⊙ exp(eta_sigma / 2 grad_sigma)

with the paper's lambda = 4 + floor(3 ln d), eta_mu = 1, eta_sigma = (3 + ln d) / (5 sqrt(d)).
A population is the mean, sigma and one seed per member
(:class:`~neuroplug.population.members.Population`): O(D) memory, nothing materialised before a
backend runs it, and ``s_k`` regenerated from the seeds for the update.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.population.members import Population
from neuroplug_algorithms.gaussian_search import (
    GaussianStrategy,
    best_first,
    diagonal_population,
    nes_utilities,
    weighted_directions,
)
from neuroplug_algorithms.snes_config import SNESConfig


class SNES(GaussianStrategy):
    """Separable NES; see the module docstring."""

    config_class = SNESConfig

    def __init__(self, config: SNESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        d = self.num_params
        self.eta_sigma = config.learning_rate_sigma or (3 + math.log(d)) / (5 * math.sqrt(d))
        self.mu = context.initial_params.detach().double().clone()
        self.sigma = torch.full((d,), float(config.sigma_init), dtype=torch.float64)

    @property
    def mean(self) -> torch.Tensor:
        return self.mu

    def _ask(self) -> Population:
        seeds = self.draw_seeds(self.population_size)
        return diagonal_population(self.mu, self.sigma, seeds, torch.ones(len(seeds)))

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        utilities = np.empty(len(fitness))
        utilities[best_first(fitness)] = nes_utilities(len(fitness))
        grad_mu, second = weighted_directions(
            population.seed, torch.from_numpy(utilities), self.num_params
        )
        grad_sigma = second - float(utilities.sum())  # sum_k u_k (s_k^2 - 1)
        self.mu = self.mu + self.config.learning_rate_mean * self.sigma * grad_mu
        self.sigma = self.sigma * torch.exp(self.eta_sigma / 2 * grad_sigma)
        return {
            "sigma_mean": float(self.sigma.mean()),
            "sigma_max": float(self.sigma.max()),
            "gradient_norm": float(grad_mu.norm()),
        }

    def _state(self) -> dict[str, Any]:
        return {"mu": self.mu.clone(), "sigma": self.sigma.clone()}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mu, self.sigma = state["mu"].clone(), state["sigma"].clone()
