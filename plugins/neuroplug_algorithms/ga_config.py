"""The settings of ``algo=ga`` (the deep GA): its config schema, beside
:mod:`neuroplug_algorithms.ga`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.algorithm_configs`` entry point ``ga``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import AlgorithmConfig
from neuroplug.errors import require

TRUNCATION_SHARE = 0.02
"""The deep GA paper's truncation, T = 20 parents of N = 1000."""


PAPER_ELITE_CANDIDATES = 10
"""The deep GA paper's elite candidates."""


@dataclass
class GAConfig(AlgorithmConfig):
    """Deep GA (Such et al. 2017) settings: the paper's Atari values.

    The paper's 20k-frame episode cap is the env's ``max_episode_steps``
    (``conf/env/breakout.yaml`` and the other Atari envs). No observation normalization and
    no action noise, as in the paper. On small tasks scale it down, e.g. for CartPole:
    ``algo.population_size=64 algo.truncation=8 algo.sigma=0.05 algo.elite_episodes=5``.
    """

    population_size: int = 1000
    """N: members per generation, the elite included (the elite plus N - 1 children)."""
    truncation: int | None = None
    """T: parents of the next generation, the elite included. Null: the paper's share of the
    population, 2% (20 of 1000), at least 2 (and below N)."""
    sigma: float = 0.002
    """Mutation power: std of the Gaussian noise a child adds to its parent."""
    elite_candidates: int | None = None
    """Members with the best fitness re-evaluated, with the previous elite, to pick the
    elite. Null: the paper's 10, or the whole population when it is smaller."""
    elite_episodes: int = 30
    """Episodes each elite candidate plays in the re-evaluation round."""

    @property
    def num_parents(self) -> int:
        """T as set, or derived from the population (settings that count members follow
        it, so any population runs with the defaults)."""
        if self.truncation is not None:
            return self.truncation
        size = self.population_size
        return min(size - 1, max(2, round(size * TRUNCATION_SHARE)))

    @property
    def num_candidates(self) -> int:
        """The elite candidates as set, or the paper's 10 capped at the population."""
        if self.elite_candidates is not None:
            return self.elite_candidates
        return min(PAPER_ELITE_CANDIDATES, self.population_size)

    def check(self) -> None:
        super().check()
        size = self.population_size
        require(
            self.truncation is None or 1 <= self.truncation < size,
            "algo.truncation",
            f"must be >= 1 and < algo.population_size ({size}), got {self.truncation}",
            f"an integer in [1, {size - 1}]",
        )
        require(self.sigma > 0, "algo.sigma", f"must be positive, got {self.sigma}", "a float > 0")
        require(
            self.elite_candidates is None or 1 <= self.elite_candidates <= size,
            "algo.elite_candidates",
            f"must be >= 1 and <= algo.population_size ({size}), got {self.elite_candidates}",
            f"an integer in [1, {size}]",
        )
        require(
            self.elite_episodes >= 1,
            "algo.elite_episodes",
            f"must be at least 1, got {self.elite_episodes}",
            "an integer >= 1",
        )
