"""``algo=cem``'s settings, apart from the algorithm so that reading them imports no torch.

The ``neuroplug.algorithm_configs`` entry point names :class:`CEMConfig`: neuroplug checks a
value on the command line (``algo.elite_fraction=abc``) and prints ``--help`` from this
module alone, without importing :mod:`neuroplug_cem.cem`, torch or anything heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import AlgorithmConfig
from neuroplug.errors import require


@dataclass
class CEMConfig(AlgorithmConfig):
    """Noisy CEM settings; the defaults solve CartPole-v1 in about 5-10 generations."""

    population_size: int = 64
    """Members sampled from the Gaussian per generation."""
    elite_fraction: float = 0.2
    """Share of the population, in (0, 1], whose parameters refit the Gaussian."""
    initial_sigma: float = 0.05
    """Initial std of every parameter around the network's initial weights."""
    extra_noise: float = 0.02
    """Std added (in quadrature) to the elite std at generation 0: the paper's Z_t."""
    noise_decay_generations: int = 100
    """Generations over which the extra noise falls linearly to 0 (0: keep it constant)."""

    @property
    def num_elites(self) -> int:
        """How many members are kept as elites each generation."""
        return max(1, round(self.elite_fraction * self.population_size))

    def check(self) -> None:
        super().check()
        require(
            0 < self.elite_fraction <= 1,
            "algo.elite_fraction",
            f"must lie in (0, 1], got {self.elite_fraction}",
            "a float in (0, 1]",
        )
        # One elite has no variance: sigma would collapse to the extra noise at once.
        require(
            self.num_elites >= 2,
            "algo.elite_fraction",
            f"{self.elite_fraction} of population {self.population_size} keeps "
            f"{self.num_elites} elite",
            "a fraction that keeps at least 2 elites",
        )
        require(
            self.initial_sigma > 0,
            "algo.initial_sigma",
            f"must be positive, got {self.initial_sigma}",
            "a float > 0",
        )
        require(
            self.extra_noise >= 0,
            "algo.extra_noise",
            f"must be non-negative, got {self.extra_noise}",
            "a float >= 0",
        )
        require(
            self.noise_decay_generations >= 0,
            "algo.noise_decay_generations",
            f"must be non-negative, got {self.noise_decay_generations}",
            "0 (constant noise) or a positive integer",
        )
