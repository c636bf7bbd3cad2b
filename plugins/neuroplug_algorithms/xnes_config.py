"""The settings of ``algo=xnes`` (:mod:`neuroplug_algorithms.xnes`), in a module that
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
class XNESConfig(GaussianStrategyConfig):
    """Exponential NES (Glasmachers et al. 2010; Wierstra et al. 2014): a full Gaussian
    ``mu + sigma B z`` moved by its natural gradient in exponential coordinates, with the
    paper's population and learning rates. ``algo=snes`` is its diagonal form, for networks
    above ``max_dimension`` parameters."""

    sigma_init: float = 0.1
    """The initial step size sigma (B starts as the identity)."""
    learning_rate_mean: float = 1.0
    """eta_mu (the paper's 1)."""
    learning_rate_sigma: float | None = None
    """eta_sigma; null: the paper's 3 (3 + ln d) / (5 d sqrt(d))."""
    learning_rate_shape: float | None = None
    """eta_B; null: the paper's 3 (3 + ln d) / (5 d sqrt(d))."""
    max_dimension: int = 10000
    """The most parameters its D x D shape matrix is kept for; above it the run is
    refused naming snes."""

    def check(self) -> None:
        super().check()
        require_positive(self.sigma_init, "sigma_init")
        require_positive(self.learning_rate_mean, "learning_rate_mean")
        for field in ("learning_rate_sigma", "learning_rate_shape"):
            require_default_or_positive(getattr(self, field), field, "3 (3 + ln d) / (5 d sqrt(d))")
        require(
            self.max_dimension >= 1,
            "algo.max_dimension",
            f"got {self.max_dimension}",
            "an integer >= 1",
        )
