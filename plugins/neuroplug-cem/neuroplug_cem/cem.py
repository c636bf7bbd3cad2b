"""``algo=cem``: the noisy cross-entropy method for policy search.

Szita & Lőrincz (2006), "Learning Tetris Using the Noisy Cross-Entropy Method", Neural
Computation 18(12):2936-2941; the cross-entropy method itself is Rubinstein's (1999).
Every parameter has its own Gaussian ``N(mu_i, sigma_i^2)``. Per generation ``t``::

    draw seeds s_1..s_P;  members x_k = mu + sigma * eps(s_k)     # diagonal Gaussian
    evaluate every member -> returns F
    elites = the round(elite_fraction * P) members with the highest F
    mu      <- mean(elites)
    sigma^2 <- var(elites) + Z_t                                  # per parameter
    Z_t = (extra_noise * max(0, 1 - t / noise_decay_generations))^2

Without ``Z_t`` the variance shrinks too fast and the search stalls early; the paper adds
variance that decreases linearly, ``Z_t = max(5 - t/10, 0)``. Here the added *std*
decreases linearly instead, so ``extra_noise`` is on the same scale as ``initial_sigma``.

The deployed policy is ``mu``. The population is handed to neuroplug compactly, as one
base (``mu``) with a per-parameter ``sigma`` vector and a noise seed per member
(``theta_k = mu + 1 * (sigma ⊙ eps(s_k))``, see :class:`neuroplug.population.members.Population`),
so a generation costs ``2 x D`` floats plus ``P`` seeds whatever ``P`` is. Seeds come from
the algorithm's checkpointed RNG, so a run is reproducible and resumes exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.population.members import Population

from neuroplug_cem.config import CEMConfig


class CrossEntropyMethod(EvolutionAlgorithm):
    """Noisy CEM: refit a diagonal Gaussian to the elite members every generation."""

    config_class = CEMConfig
    contract = 1  # neuroplug.api.CONTRACT_VERSION it was written for: another one is refused

    def __init__(self, config: CEMConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.mean = context.initial_params.detach().clone().float()
        self.std = torch.full_like(self.mean, config.initial_sigma)

    def _ask(self) -> Population:
        size = self.config.population_size
        return Population(
            bases=self.mean.unsqueeze(0),
            base_index=torch.zeros(size, dtype=torch.int64),
            scale=torch.ones(size),
            seed=self.draw_seeds(size),
            sigma=self.std.unsqueeze(0),
        )

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        # A stable sort breaks ties by member index, so equal returns stay deterministic.
        order = np.argsort(-fitness, kind="stable")[: self.config.num_elites]
        elites = population.materialize(torch.from_numpy(order), device="cpu")
        extra = self.extra_noise()
        self.mean = elites.mean(dim=0)
        # The maximum-likelihood (biased) variance around the new mean, as in the paper.
        self.std = (elites.var(dim=0, correction=0) + extra**2).sqrt()
        return {
            "elite_return_mean": float(fitness[order].mean()),
            "elite_return_min": float(fitness[order].min()),
            "sigma_mean": float(self.std.mean()),
            "extra_noise": extra,
            "mean_norm": float(self.mean.norm()),
        }

    def extra_noise(self) -> float:
        """The extra std added at the current generation (linearly decreasing, then 0)."""
        config = self.config
        if config.noise_decay_generations == 0:
            return config.extra_noise
        return config.extra_noise * max(0.0, 1.0 - self.generation / config.noise_decay_generations)

    def policy_params(self) -> torch.Tensor:
        return self.mean.clone()

    def _state(self) -> dict[str, Any]:
        return {"mean": self.mean.clone(), "std": self.std.clone()}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mean = state["mean"].clone()
        self.std = state["std"].clone()
