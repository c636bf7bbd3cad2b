"""The settings of ``algo=pgpe`` (:mod:`neuroplug_algorithms.pgpe`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.errors import require
from neuroplug_algorithms.gaussian_search_config import GaussianStrategyConfig, require_positive


@dataclass
class PGPEConfig(GaussianStrategyConfig):
    """PGPE (Sehnke et al. 2010) with symmetric sampling and the ClipUp optimizer (Toklu
    et al. 2020). The defaults are EvoTorch's MuJoCo example settings (center learning
    rate 0.01125, max speed 0.0225, stdev learning rate 0.1, radius 0.27)."""

    center_learning_rate: float = 0.01125
    """ClipUp's step size alpha (the ClipUp paper: half the max speed)."""
    max_speed: float = 0.0
    """ClipUp's largest step norm; 0: twice ``center_learning_rate``."""
    momentum: float = 0.9
    """ClipUp's momentum (the paper's 0.9)."""
    optimizer: str = "clipup"
    """How the mean moves along its gradient: ``clipup``, ``adam`` or ``sgd``."""
    stdev_learning_rate: float = 0.1
    """The std's learning rate (Sehnke et al.'s alpha_sigma)."""
    radius_init: float = 0.27
    """The initial std's norm: every parameter starts at radius_init / sqrt(D) (ClipUp's
    setting of sigma)."""
    stdev_max_change: float = 0.2
    """The largest relative change of each std per generation (EvoTorch's 0.2); 0: no
    limit."""
    fitness_shaping: str = "centered_ranks"
    """``centered_ranks`` (EvoTorch's default) or ``baseline`` (Sehnke et al.: rewards
    against their mean, scaled by the best's distance from it)."""

    minimum_population: ClassVar[int] = 2

    def check(self) -> None:
        super().check()
        require(
            self.population_size % 2 == 0,
            "algo.population_size",
            f"symmetric sampling draws pairs, got {self.population_size}",
            "an even integer, or 0 (the paper's size, rounded up to even)",
        )
        require_positive(self.center_learning_rate, "center_learning_rate")
        require_positive(self.stdev_learning_rate, "stdev_learning_rate")
        require_positive(self.radius_init, "radius_init")
        require(self.max_speed >= 0, "algo.max_speed", f"got {self.max_speed}", "0 or a float > 0")
        require(
            0 <= self.momentum < 1, "algo.momentum", f"got {self.momentum}", "a float in [0, 1)"
        )
        require(
            self.optimizer in ("clipup", "adam", "sgd"),
            "algo.optimizer",
            f"got {self.optimizer!r}",
            "clipup, adam, sgd",
        )
        require(
            self.stdev_max_change >= 0,
            "algo.stdev_max_change",
            f"got {self.stdev_max_change}",
            "0 (no limit) or a float > 0",
        )
        require(
            self.fitness_shaping in ("centered_ranks", "baseline"),
            "algo.fitness_shaping",
            f"got {self.fitness_shaping!r}",
            "centered_ranks, baseline",
        )
