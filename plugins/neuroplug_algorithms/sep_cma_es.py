"""``algo=sep_cma_es``: CMA-ES with a diagonal covariance, linear in the dimension.

Ros & Hansen (2008), "A Simple Modification in CMA-ES Achieving Linear Time and Space
Complexity". CMA-ES (:mod:`neuroplug_algorithms.cma_es`, whose paths, step size and
restarts it shares) with C restricted to its diagonal ``c``, and the covariance learning
rates multiplied by (n + 2) / 3::

    z_k ~ N(0, I);  x_k = m + sigma sqrt(c) ⊙ z_k
    y_w = sqrt(c) ⊙ sum_i w_i z_{i:lambda};  m <- m + sigma y_w
    p_sigma, h_sigma, p_c and sigma as CMA-ES, with C^{-1/2} y_w = sum_i w_i z_{i:lambda}
    c <- (1 - c_1 - c_mu + (1 - h_sigma) c_1 c_c (2 - c_c)) c
         + c_1 p_c^2 + c_mu c ⊙ sum_i w_i z_{i:lambda}^2

A population is the mean, its per-parameter std ``sigma sqrt(c)`` and one seed per member
(:class:`~neuroplug.population.members.Population`): nothing is materialised before a backend runs
it (the Triton kernel builds each member inside the kernel), and the update regenerates
the selected members' z from their seeds. Memory O(D): network-sized searches run.
"""

from __future__ import annotations

from typing import Any

import torch

from neuroplug.population.members import Population
from neuroplug_algorithms.cma_es import CMAES, MAX_CONDITION
from neuroplug_algorithms.gaussian_search import diagonal_population, weighted_directions
from neuroplug_algorithms.sep_cma_es_config import SepCMAESConfig


class SepCMAES(CMAES):
    """sep-CMA-ES; see the module docstring."""

    config_class = SepCMAESConfig
    diagonal = True

    def _start_covariance(self) -> None:
        self.c = torch.ones(self.num_params, dtype=torch.float64)
        """The diagonal of C."""

    @property
    def D(self) -> torch.Tensor:  # noqa: N802 (the papers' name)
        """Every coordinate's std before sigma: sqrt(c)."""
        return self.c.sqrt()

    def _ask(self) -> Population:
        seeds = self.draw_seeds(self.population_size)
        signs = torch.ones(self.population_size)
        return diagonal_population(self.m, self.sigma * self.D, seeds, signs)

    def _recombine(self, population: Population, chosen: torch.Tensor):
        weights = torch.from_numpy(self.constants.weights)
        z_w, z2_w = weighted_directions(population.seed[chosen], weights, self.num_params)
        return self.D * z_w, self.c * z2_w

    def _inverse_sqrt_times(self, vector: torch.Tensor) -> torch.Tensor:
        return vector / self.D

    def _adapt_covariance(self, rank_mu: torch.Tensor) -> None:
        k = self.constants
        lost = (1 - self.h_sigma) * k.c_1 * k.c_c * (2 - k.c_c)
        c = (1 - k.c_1 - k.c_mu + lost) * self.c + k.c_1 * self.p_c**2 + k.c_mu * rank_mu
        self.c = c.clamp_min(float(c.max()) / MAX_CONDITION)

    def _coordinate_stds(self) -> torch.Tensor:
        return self.D

    def _covariance_state(self) -> dict[str, Any]:
        return {"c": self.c.clone()}

    def _load_covariance(self, state: dict[str, Any]) -> None:
        self.c = state["c"].clone()
