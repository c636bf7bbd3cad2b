"""The settings every Gaussian search strategy shares (``cma_es``, ``sep_cma_es``,
``pgpe``, ``snes``, ``xnes``), in a module that imports no torch: the base of their config
schemas, each beside its strategy (``<name>_config.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import AlgorithmConfig
from neuroplug.errors import require


@dataclass
class GaussianStrategyConfig(AlgorithmConfig):
    """A search distribution over the network's parameters, its mean the deployed policy."""

    population_size: int = 0
    """Members per generation; 0: the paper's default from the number of parameters D,
    ``4 + floor(3 ln D)`` (CMA-ES, SNES, xNES; 29 for a 64-64 MLP on CartPole). RL
    returns are noisy: larger populations often pay (EvoTorch's MuJoCo examples use
    hundreds)."""
    obs_norm: bool = True
    """Normalise vector observations by running statistics (as OpenAI ES and EvoTorch's
    ``GymNE`` do)."""

    population_from_dimension: ClassVar[bool] = True
    minimum_population: ClassVar[int] = 4
    """The smallest population the strategy's update is defined for."""

    def check(self) -> None:
        super().check()
        require(
            self.population_size == 0 or self.population_size >= self.minimum_population,
            "algo.population_size",
            f"{self.name} needs at least {self.minimum_population} members, got "
            f"{self.population_size}",
            f"0 (the paper's 4 + 3 ln D) or an integer >= {self.minimum_population}",
        )


def require_positive(value: float, field: str) -> None:
    """Refuse ``value <= 0`` for ``algo.<field>``, in one line."""
    require(value > 0, f"algo.{field}", f"must be positive, got {value}", "a float > 0")


def require_default_or_positive(value: float | None, field: str, what: str) -> None:
    """Refuse a set ``value <= 0``; ``None`` means the paper's default, ``what``."""
    require(
        value is None or value > 0,
        f"algo.{field}",
        f"must be positive, got {value}",
        f"null (the paper's {what}) or a float > 0",
    )
