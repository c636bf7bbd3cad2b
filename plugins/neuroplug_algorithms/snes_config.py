"""The settings of ``algo=snes`` (:mod:`neuroplug_algorithms.snes`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug_algorithms.gaussian_search_config import (
    GaussianStrategyConfig,
    require_default_or_positive,
    require_positive,
)


@dataclass
class SNESConfig(GaussianStrategyConfig):
    """Separable NES (Schaul, Glasmachers & Schmidhuber 2011): a diagonal Gaussian moved by
    its natural gradient with the NES utilities; the paper's population and learning
    rates."""

    sigma_init: float = 0.1
    """Every parameter's initial std."""
    learning_rate_mean: float = 1.0
    """eta_mu (the paper's 1)."""
    learning_rate_sigma: float | None = None
    """eta_sigma; null: the paper's (3 + ln d) / (5 sqrt(d))."""

    def check(self) -> None:
        super().check()
        require_positive(self.sigma_init, "sigma_init")
        require_positive(self.learning_rate_mean, "learning_rate_mean")
        require_default_or_positive(
            self.learning_rate_sigma, "learning_rate_sigma", "(3 + ln d) / (5 sqrt(d))"
        )
