"""The settings of ``algo=cma_es`` (:mod:`neuroplug_algorithms.cma_es`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug_algorithms.gaussian_search_config import (
    GaussianStrategyConfig,
    require_default_or_positive,
    require_positive,
)


@dataclass
class CMAConstants(GaussianStrategyConfig):
    """CMA's step size, selection and adaptation constants (Hansen 2016, Table 1); null
    takes the tutorial's default for the dimension and population."""

    sigma_init: float = 0.1
    """The initial step size sigma_0 (the tutorial: about a quarter of the search range)."""
    parents: int = 0
    """mu, the members recombined into the new mean; 0: half the population."""
    c_c: float | None = None
    """Cumulation of the rank-one evolution path; null: (4 + mu_eff/n) / (n + 4 + 2 mu_eff/n)."""
    c_sigma: float | None = None
    """Cumulation of the step-size path; null: (mu_eff + 2) / (n + mu_eff + 5)."""
    c_1: float | None = None
    """Rank-one learning rate; null: 2 / ((n + 1.3)^2 + mu_eff)."""
    c_mu: float | None = None
    """Rank-mu learning rate; null: min(1 - c_1, 2 (mu_eff - 2 + 1/mu_eff) / ((n + 2)^2 + mu_eff))."""
    damping: float | None = None
    """d_sigma, the step size's damping; null: 1 + 2 max(0, sqrt((mu_eff - 1)/(n + 1)) - 1) + c_sigma."""
    restarts: int = 0
    """IPOP-CMA-ES (Auger & Hansen 2005): restarts, each with the population multiplied by
    ``restart_population_factor`` from a fresh draw of the network's initialisation, when
    the search stalls (tol_fun, tol_x, condition above 1e14); 0: no restarts."""
    restart_population_factor: float = 2.0
    """The population's growth at each IPOP restart (the paper's 2)."""
    tol_fun: float = 1e-12
    """Restart when the best fitness of the last 10 + 30 n / lambda generations spans less."""
    tol_x: float = 1e-12
    """Restart when sigma times every coordinate's std falls below this."""

    def check(self) -> None:
        super().check()
        require_positive(self.sigma_init, "sigma_init")
        require(self.parents >= 0, "algo.parents", f"got {self.parents}", "0 or an integer >= 1")
        require(
            self.parents == 0 or self.population_size == 0 or self.parents <= self.population_size,
            "algo.parents",
            f"{self.parents} parents from a population of {self.population_size}",
            f"at most algo.population_size ({self.population_size}), or 0 (half of it)",
        )
        for field in ("c_c", "c_sigma", "c_1", "c_mu", "damping"):
            require_default_or_positive(getattr(self, field), field, "value for the dimension")
        for field in ("c_c", "c_sigma"):
            value = getattr(self, field)
            require(
                value is None or value <= 1,
                f"algo.{field}",
                f"a cumulation constant is at most 1, got {value}",
                "null or a float in (0, 1]",
            )
        require(
            self.c_1 is None or self.c_mu is None or self.c_1 + self.c_mu <= 1,
            "algo.c_1",
            f"c_1 + c_mu must not exceed 1, got {self.c_1} + {self.c_mu}",
            "learning rates that sum to at most 1",
        )
        require(self.restarts >= 0, "algo.restarts", f"got {self.restarts}", "an integer >= 0")
        require(
            self.restart_population_factor >= 1,
            "algo.restart_population_factor",
            f"got {self.restart_population_factor}",
            "a float >= 1 (the paper's 2)",
        )
        require(self.tol_fun >= 0, "algo.tol_fun", f"got {self.tol_fun}", "a float >= 0")
        require(self.tol_x >= 0, "algo.tol_x", f"got {self.tol_x}", "a float >= 0")


@dataclass
class CMAESConfig(CMAConstants):
    """CMA-ES with a full covariance matrix (Hansen & Ostermeier 2001; the constants of
    Hansen's 2016 tutorial). The covariance is D x D, so a network above
    ``max_dimension`` parameters is refused; ``algo=sep_cma_es`` and ``algo=snes`` scale
    to any network."""

    max_dimension: int = 10000
    """The most parameters a full covariance is kept for (its D x D matrices, float64,
    and their eigendecomposition); above it the run is refused naming sep_cma_es."""
    eigen_interval: int = 0
    """Generations between eigendecompositions of C; 0: the tutorial's lazy interval,
    1 / (10 n (c_1 + c_mu)) generations, at least 1."""

    def check(self) -> None:
        super().check()
        require(
            self.max_dimension >= 1,
            "algo.max_dimension",
            f"got {self.max_dimension}",
            "an integer >= 1",
        )
        require(
            self.eigen_interval >= 0,
            "algo.eigen_interval",
            f"got {self.eigen_interval}",
            "0 (lazy, the tutorial's) or an integer >= 1",
        )
