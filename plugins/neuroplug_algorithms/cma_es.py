"""``algo=cma_es``: the covariance matrix adaptation evolution strategy, with IPOP restarts.

Hansen & Ostermeier (2001), "Completely Derandomized Self-Adaptation in Evolution
Strategies"; the constants and update as in Hansen (2016), "The CMA Evolution Strategy: A
Tutorial", arXiv:1604.00772; restarts with growing populations from Auger & Hansen (2005),
"A Restart CMA Evolution Strategy With Increasing Population Size". Per generation::

    z_k ~ N(0, I);  y_k = B D z_k;  x_k = m + sigma y_k          k = 1..lambda
    evaluate, order best first;  y_w = sum_{i<=mu} w_i y_{i:lambda}
    m       <- m + sigma y_w                                       # c_m = 1
    p_sigma <- (1 - c_sigma) p_sigma + sqrt(c_sigma (2 - c_sigma) mu_eff) C^{-1/2} y_w
    h_sigma  = ||p_sigma|| / sqrt(1 - (1 - c_sigma)^(2 (g + 1))) < (1.4 + 2/(n + 1)) E||N(0, I)||
    p_c     <- (1 - c_c) p_c + h_sigma sqrt(c_c (2 - c_c) mu_eff) y_w
    C       <- (1 - c_1 - c_mu + (1 - h_sigma) c_1 c_c (2 - c_c)) C
               + c_1 p_c p_c^T + c_mu sum_i w_i y_{i:lambda} y_{i:lambda}^T
    sigma   <- sigma exp(c_sigma / d_sigma (||p_sigma|| / E||N(0, I)|| - 1))
    every few generations: C = B D^2 B^T (eigendecomposition)

The papers minimise; here the fitness (a return) is maximised, so "best" is the highest.
``z_k`` are the counter-based noise of the member's seed (:mod:`neuroplug.population.noise`), so a run
repeats on any machine; the members are materialised (a full covariance correlates every
parameter), ``(lambda, D)``, and C and B are ``D x D`` float64: the run is refused above
``algo.max_dimension`` (10,000 by default), naming the diagonal ``sep_cma_es`` and ``snes``.

Departures: the positive recombination weights only (no active CMA's negative ones); C's
eigendecomposition is lazy, every ``1 / (10 n (c_1 + c_mu))`` generations (the tutorial's
B.2); an IPOP restart starts from a fresh draw of the network's initialisation rather than a
uniform point in a box (a network's weights have no box), with sigma back to sigma_0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.population.members import Population
from neuroplug_algorithms.cma_es_config import CMAConstants, CMAESConfig
from neuroplug_algorithms.gaussian_search import (
    GaussianStrategy,
    best_first,
    directions,
    recombination_weights,
)

MAX_CONDITION = 1e14
"""The largest condition number of C kept (the tutorial's stopping rule's bound): IPOP
restarts there; without restarts left, C's smallest eigenvalues are raised to it."""


@dataclass(frozen=True)
class CMAParameters:
    """The strategy parameters of one (re)start: the selection and adaptation constants
    for dimension n and population lambda (Hansen 2016, Table 1), or the config's."""

    size: int
    parents: int
    weights: np.ndarray
    mu_eff: float
    c_c: float
    c_sigma: float
    c_1: float
    c_mu: float
    damping: float
    expected_norm: float
    """E||N(0, I)||, approximated as sqrt(n) (1 - 1/(4n) + 1/(21 n^2))."""

    @classmethod
    def of(cls, config: CMAConstants, n: int, size: int, diagonal: bool = False):
        """The defaults for ``n`` parameters and ``size`` members; sep-CMA-ES
        (``diagonal``) learns its covariance (n + 2) / 3 times faster (Ros & Hansen 2008)."""
        parents = config.parents or size // 2
        weights = recombination_weights(size, parents)
        mu_eff = 1.0 / float((weights**2).sum())
        c_c = config.c_c or (4 + mu_eff / n) / (n + 4 + 2 * mu_eff / n)
        c_sigma = config.c_sigma or (mu_eff + 2) / (n + mu_eff + 5)
        speed = (n + 2) / 3 if diagonal else 1.0
        c_1 = config.c_1 or min(1.0, speed * 2 / ((n + 1.3) ** 2 + mu_eff))
        c_mu = config.c_mu or min(
            1 - c_1, speed * 2 * (mu_eff - 2 + 1 / mu_eff) / ((n + 2) ** 2 + mu_eff)
        )
        damping = config.damping or (
            1 + 2 * max(0.0, math.sqrt((mu_eff - 1) / (n + 1)) - 1) + c_sigma
        )
        expected = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))
        return cls(size, parents, weights, mu_eff, c_c, c_sigma, c_1, c_mu, damping, expected)


class CMAES(GaussianStrategy):
    """CMA-ES with a full covariance and optional IPOP restarts; see the module docstring."""

    config_class = CMAESConfig
    diagonal = False

    def __init__(self, config: CMAConstants, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        if not self.diagonal:
            self.refuse_full_covariance_above(config.max_dimension)
        self.restart = 0
        self._start(context.initial_params, self.population_size)

    # --- one (re)start ---------------------------------------------------------------

    def _start(self, mean: torch.Tensor, size: int) -> None:
        """A fresh search from ``mean`` with ``size`` members and sigma_0."""
        n = self.num_params
        self.population_size = size
        self.constants = CMAParameters.of(self.config, n, size, self.diagonal)
        self.m = mean.detach().double().clone()
        self.sigma = float(self.config.sigma_init)
        self.p_sigma = torch.zeros(n, dtype=torch.float64)
        self.p_c = torch.zeros(n, dtype=torch.float64)
        self._start_covariance()
        self.generations_this_start = 0
        self.best_history: list[float] = []

    def _start_covariance(self) -> None:
        n = self.num_params
        self.C = torch.eye(n, dtype=torch.float64)
        """The covariance. Only its upper triangle (with the diagonal) is ever read: the
        updates are elementwise, and the eigendecomposition reads that triangle; a product's
        two triangles can differ in the last bits, and making C symmetric would cost a
        transposed pass a generation. So a checkpoint stores that triangle alone."""
        self.decomposed = _upper_triangle(self.C)
        """The upper triangle of C as it was at the last eigendecomposition: B and D are a
        function of it, so a checkpoint stores it (only where C has moved on since) rather
        than B, and a resume decomposes it again to the same bits."""
        self.moved = False
        """Whether C has changed since its last eigendecomposition."""
        self.B = torch.eye(n, dtype=torch.float64)
        self.D = torch.ones(n, dtype=torch.float64)
        """The square roots of C's eigenvalues (C = B diag(D^2) B^T)."""
        self.decomposed_at = 0

    @property
    def mean(self) -> torch.Tensor:
        return self.m

    # --- ask ----------------------------------------------------------------------------

    def _ask(self) -> Population:
        seeds = self.draw_seeds(self.population_size)
        z = directions(seeds, self.num_params).double()
        y = (z * self.D) @ self.B.T  # B D z, row by row
        return Population.dense((self.m + self.sigma * y).float())

    # --- tell ---------------------------------------------------------------------------

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        k = self.constants
        order = best_first(fitness)[: k.parents]
        y_w, rank_mu = self._recombine(population, torch.from_numpy(order))
        self.m = self.m + self.sigma * y_w
        self.generations_this_start += 1
        norm = self._adapt_paths(y_w)
        self._adapt_covariance(rank_mu)
        # The step-size change bounded by e per generation (as pycma does): a degenerate
        # generation (a flat fitness, members rounded to float32) cannot overflow it.
        self.sigma *= math.exp(min(1.0, k.c_sigma / k.damping * (norm / k.expected_norm - 1)))
        self.best_history.append(float(fitness[order[0]]))
        stats = {
            "sigma": self.sigma,
            "population": float(self.population_size),
            "restarts": float(self.restart),
            "axis_ratio": float(self.D.max() / self.D.min()),
        }
        if self.restart < self.config.restarts and self._stalled():
            self._ipop_restart()
        return stats

    def _recombine(self, population: Population, chosen: torch.Tensor):
        """``y_w`` and the rank-mu update ``sum_i w_i y_i y_i^T`` of the selected members
        (best first), their y read from the members themselves (x = m + sigma y)."""
        y = (population.bases[chosen].double() - self.m) / self.sigma
        weights = torch.from_numpy(self.constants.weights)
        return weights @ y, (y.T * weights) @ y

    def _adapt_paths(self, y_w: torch.Tensor) -> float:
        """Move both evolution paths along ``y_w``; returns ||p_sigma||."""
        k = self.constants
        whitened = self._inverse_sqrt_times(y_w)
        self.p_sigma = (1 - k.c_sigma) * self.p_sigma + math.sqrt(
            k.c_sigma * (2 - k.c_sigma) * k.mu_eff
        ) * whitened
        norm = float(self.p_sigma.norm())
        decay = 1 - (1 - k.c_sigma) ** (2 * self.generations_this_start)
        self.h_sigma = norm / math.sqrt(decay) < (1.4 + 2 / (self.num_params + 1)) * (
            k.expected_norm
        )
        self.p_c = (1 - k.c_c) * self.p_c + self.h_sigma * math.sqrt(
            k.c_c * (2 - k.c_c) * k.mu_eff
        ) * y_w
        return norm

    def _inverse_sqrt_times(self, vector: torch.Tensor) -> torch.Tensor:
        """C^{-1/2} vector = B D^{-1} B^T vector."""
        return self.B @ ((self.B.T @ vector) / self.D)

    def _adapt_covariance(self, rank_mu: torch.Tensor) -> None:
        """The rank-one and rank-mu updates of C, then (lazily) its eigendecomposition
        (the positive weights sum to one)."""
        k = self.constants
        lost = (1 - self.h_sigma) * k.c_1 * k.c_c * (2 - k.c_c)
        self.C *= 1 - k.c_1 - k.c_mu + lost
        self.C += k.c_1 * torch.outer(self.p_c, self.p_c)
        self.C += k.c_mu * rank_mu
        self.moved = True
        interval = self.config.eigen_interval or max(
            1, int(1 / (10 * self.num_params * (k.c_1 + k.c_mu)))
        )
        if self.generations_this_start - self.decomposed_at >= interval:
            self._decompose()

    def _decompose(self) -> None:
        """C = B diag(D^2) B^T, with C's condition number at most MAX_CONDITION (members
        are float32: a search that collapses onto a float32 grid would otherwise drive an
        eigenvalue to 0 and C^{-1/2} to infinity)."""
        self.decomposed = _upper_triangle(self.C)
        self.B, self.D, clamped = _eigendecomposition(self.C)
        self.moved = clamped is not None
        if clamped is not None:
            self.C = clamped
        self.decomposed_at = self.generations_this_start

    # --- IPOP ---------------------------------------------------------------------------

    def _stalled(self) -> bool:
        """The tutorial's stopping rules that make IPOP restart: the best fitness flat over
        the last 10 + 30 n / lambda generations (tol_fun), every coordinate's std and the
        path below tol_x, or C's condition number above 1e14."""
        window = 10 + math.ceil(30 * self.num_params / self.population_size)
        recent = self.best_history[-window:]
        if len(recent) == window and max(recent) - min(recent) < self.config.tol_fun:
            return True
        stds = self.sigma * self._coordinate_stds()
        if (
            float(stds.max()) < self.config.tol_x
            and float((self.sigma * self.p_c).abs().max()) < self.config.tol_x
        ):
            return True
        return float(self.D.max() / self.D.min()) ** 2 >= MAX_CONDITION / 10

    def _coordinate_stds(self) -> torch.Tensor:
        return self.C.diagonal().clamp_min(0).sqrt()

    def _ipop_restart(self) -> None:
        self.restart += 1
        size = math.ceil(self.population_size * self.config.restart_population_factor)
        start = self.fresh_params(int(self.draw_seeds(1)[0]))
        self._start(start, size)

    # --- checkpoint ---------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        return {
            "restart": self.restart,
            "population_size": self.population_size,
            "m": self.m.clone(),
            "sigma": self.sigma,
            "p_sigma": self.p_sigma.clone(),
            "p_c": self.p_c.clone(),
            "covariance": self._covariance_state(),
            "generations_this_start": self.generations_this_start,
            "best_history": list(self.best_history),
        }

    def _covariance_state(self) -> dict[str, Any]:
        # C and the C that B and D decompose, each as its upper triangle (row by row): half
        # of C, B and D in full at most, a quarter when C has not moved on since.
        return {
            "C": _upper_triangle(self.C),
            "decomposed": self.decomposed.clone() if self.moved else None,
            "decomposed_at": self.decomposed_at,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.restart = int(state["restart"])
        self._start(state["m"], int(state["population_size"]))
        self.sigma = float(state["sigma"])
        self.p_sigma = state["p_sigma"].clone()
        self.p_c = state["p_c"].clone()
        self._load_covariance(state["covariance"])
        self.generations_this_start = int(state["generations_this_start"])
        self.best_history = list(state["best_history"])

    def _load_covariance(self, state: dict[str, Any]) -> None:
        n = self.num_params
        self.C = _from_upper_triangle(state["C"], n)
        stored = state["decomposed"]
        self.moved = stored is not None
        self.decomposed = state["C"].clone() if stored is None else stored.clone()
        self.B, self.D, _ = _eigendecomposition(_from_upper_triangle(self.decomposed, n))
        self.decomposed_at = int(state["decomposed_at"])


def _eigendecomposition(
    covariance: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """B, D and, where C's condition number exceeds MAX_CONDITION, the C rebuilt with its
    smallest eigenvalues raised to the bound (else None). A pure function of C's upper
    triangle: a resume recomputes it at the run's fixed thread count, to the bits the run
    had."""
    eigenvalues, vectors = torch.linalg.eigh(covariance, UPLO="U")
    floor = float(eigenvalues.max()) / MAX_CONDITION
    clamped = None
    if float(eigenvalues.min()) < floor:
        eigenvalues = eigenvalues.clamp_min(floor)
        clamped = (vectors * eigenvalues) @ vectors.T
    return vectors, eigenvalues.sqrt(), clamped


def _upper_triangle(matrix: torch.Tensor) -> torch.Tensor:
    """The upper triangle of a square matrix with its diagonal, row by row: n (n + 1) / 2
    numbers (row slices: a third of a boolean mask's time)."""
    return torch.cat([row[index:] for index, row in enumerate(matrix)])


def _from_upper_triangle(triangle: torch.Tensor, n: int) -> torch.Tensor:
    """The symmetric ``n x n`` matrix whose upper triangle is ``triangle``."""
    mask = _upper_mask(n)
    upper = torch.zeros(n, n, dtype=triangle.dtype)
    upper[mask] = triangle
    return torch.where(mask, upper, upper.T)


def _upper_mask(n: int) -> torch.Tensor:
    """True on and above the diagonal (a byte per entry: index pairs would take 16)."""
    return torch.ones(n, n, dtype=torch.bool).triu()
