"""``algo=xnes``: exponential natural evolution strategies.

Glasmachers, Schaul, Sun, Wierstra & Schmidhuber (2010), "Exponential Natural Evolution
Strategies"; Wierstra et al. (2014), "Natural Evolution Strategies", JMLR 15, Algorithm 5.
The search distribution is N(mu, sigma^2 B B^T) with det(B) = 1. Per generation::

    s_k ~ N(0, I);  z_k = mu + sigma B s_k                          k = 1..lambda
    evaluate, sort;  u_k the NES utilities of the ranks (best first)
    G_delta = sum_k u_k s_k
    G_M     = sum_k u_k (s_k s_k^T - I)
    G_sigma = tr(G_M) / d;   G_B = G_M - G_sigma I
    mu    <- mu + eta_mu sigma B G_delta
    sigma <- sigma exp(eta_sigma / 2 G_sigma)
    B     <- B expm(eta_B / 2 G_B)

G_M is a rank-lambda matrix plus a multiple of I, so its exponential is computed from a
lambda x lambda eigenproblem: O(D^2 lambda) per generation, not the D^3 of a dense
``expm``.

with the paper's lambda = 4 + floor(3 ln d), eta_mu = 1 and
eta_sigma = eta_B = 3 (3 + ln d) / (5 d sqrt(d)). B is ``D x D`` (float64) and the members
are materialised: the run is refused above ``algo.max_dimension`` (10,000 by default),
naming ``snes``, its diagonal form.
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
    directions,
    nes_utilities,
)
from neuroplug_algorithms.xnes_config import XNESConfig


class XNES(GaussianStrategy):
    """Exponential NES; see the module docstring."""

    config_class = XNESConfig

    def __init__(self, config: XNESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.refuse_full_covariance_above(config.max_dimension)
        d = self.num_params
        default = 3 * (3 + math.log(d)) / (5 * d * math.sqrt(d))
        self.eta_sigma = config.learning_rate_sigma or default
        self.eta_shape = config.learning_rate_shape or default
        self.mu = context.initial_params.detach().double().clone()
        self.sigma = float(config.sigma_init)
        self.B = torch.eye(d, dtype=torch.float64)

    @property
    def mean(self) -> torch.Tensor:
        return self.mu

    def _ask(self) -> Population:
        seeds = self.draw_seeds(self.population_size)
        # Kept for the update: tell follows ask within a generation (checkpoints fall
        # between generations), and regenerating the noise would cost as much again.
        self._directions = directions(seeds, self.num_params).double()
        return Population.dense((self.mu + self.sigma * self._directions @ self.B.T).float())

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        d = self.num_params
        s = self._directions
        utilities = np.empty(len(fitness))
        utilities[best_first(fitness)] = nes_utilities(len(fitness))
        u = torch.from_numpy(utilities)
        g_delta = u @ s
        # G_M = S^T diag(u) S - (sum u) I: a matrix of rank lambda plus a multiple of I.
        g_sigma = (float(u @ (s * s).sum(dim=1)) - d * float(u.sum())) / d
        self.mu = self.mu + self.config.learning_rate_mean * self.sigma * (self.B @ g_delta)
        self.sigma *= math.exp(self.eta_sigma / 2 * g_sigma)
        # B expm(eta_B / 2 (G_M - G_sigma I)): the multiple of I is a scalar factor, and the
        # rank-lambda part's exponential is I + Q W (exp(L) - 1) W^T Q^T from the lambda x
        # lambda eigenproblem of S^T = Q R, R diag(u) R^T = W L W^T: O(D^2 lambda), not D^3.
        scale = math.exp(-self.eta_shape / 2 * (float(u.sum()) + g_sigma))
        q, r = torch.linalg.qr(s.T)
        eigenvalues, w = torch.linalg.eigh((r * u) @ r.T)
        basis = q @ w
        growth = torch.expm1(self.eta_shape / 2 * eigenvalues)
        self.B = scale * (self.B + ((self.B @ basis) * growth) @ basis.T)
        return {"sigma": self.sigma, "gradient_norm": float(g_delta.norm())}

    def _state(self) -> dict[str, Any]:
        return {"mu": self.mu.clone(), "sigma": self.sigma, "B": self.B.clone()}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mu, self.sigma, self.B = state["mu"].clone(), float(state["sigma"]), state["B"].clone()
