"""The settings of this distribution's algorithms (their config schemas).

They live apart from the algorithms so that reading them imports no torch: the command
line checks a value (``algo.sigma=abc``) and prints ``--help`` from these classes alone,
named by the ``neuroplug.algorithm_configs`` entry points. Each algorithm's file imports
its own from here; its values per task are in ``conf/algo/<name>.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import AlgorithmConfig
from neuroplug.behaviors import BEHAVIORS
from neuroplug.errors import require

TRUNCATION_SHARE = 0.02
"""The deep GA paper's truncation, T = 20 parents of N = 1000."""
PAPER_ELITE_CANDIDATES = 10
"""The deep GA paper's elite candidates."""


@dataclass
class ESStepConfig(AlgorithmConfig):
    """Settings of the OpenAI-ES step (the paper's MuJoCo defaults)."""

    population_size: int = 64
    sigma: float = 0.02
    """Std of the parameter perturbations."""
    learning_rate: float = 0.01
    """Adam step size."""
    l2_coeff: float = 0.005
    """L2 weight decay added to the gradient estimate."""
    mirrored: bool = True
    """Antithetic pairs theta +/- sigma*eps share one seed (population must be even)."""
    fitness_shaping: str = "centered_ranks"
    """``centered_ranks`` or ``none`` (raw returns, standardised)."""
    obs_norm: bool = True
    action_noise: float = 0.01
    perturbation: str = "full"
    """``full`` (dense noise on every parameter) or ``lowrank`` (EGGROLL factors on the
    large weight matrices and convolution kernels)."""
    rank: int = 4
    """Rank of the low-rank perturbations."""
    lowrank_min_size: int = 65536
    """Weight matrices and convolution kernels with at least this many entries get
    low-rank perturbations (the Nature CNN's convolutions have 8,192-36,864)."""

    # OpenAI's ES normalized every Atari policy's layers by a reference batch, as did the
    # novelty ES family after it (Uber's ESAtariPolicy).
    virtual_batch_norm_families: ClassVar[tuple[str, ...]] = ("atari",)

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.sigma > 0, "algo.sigma", f"must be positive, got {self.sigma}", "a float > 0")
        require(
            self.learning_rate > 0,
            "algo.learning_rate",
            f"must be positive, got {self.learning_rate}",
            "a float > 0",
        )
        require(self.l2_coeff >= 0, "algo.l2_coeff", f"got {self.l2_coeff}", "a float >= 0")
        require(
            not self.mirrored or self.population_size % 2 == 0,
            "algo.population_size",
            f"mirrored sampling needs an even population, got {self.population_size}",
            "an even integer, or algo.mirrored=false",
        )
        require(
            self.fitness_shaping in ("centered_ranks", "none"),
            "algo.fitness_shaping",
            f"got {self.fitness_shaping!r}",
            "centered_ranks, none",
        )
        require(
            self.perturbation in ("full", "lowrank"),
            "algo.perturbation",
            f"got {self.perturbation!r}",
            "full, lowrank",
        )
        require(self.rank >= 1, "algo.rank", f"got {self.rank}", "an integer >= 1")
        require(
            self.lowrank_min_size >= 1,
            "algo.lowrank_min_size",
            f"got {self.lowrank_min_size}",
            "an integer >= 1",
        )


@dataclass
class ESConfig(ESStepConfig):
    """OpenAI ES settings (the paper's MuJoCo defaults; every field is the ES step's)."""


@dataclass
class GAConfig(AlgorithmConfig):
    """Deep GA settings (the paper's Atari values)."""

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

    def __post_init__(self) -> None:
        super().__post_init__()
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


@dataclass
class RandomSearchConfig(AlgorithmConfig):
    """Random search settings (the deep GA paper's population, so frames match its GA)."""

    population_size: int = 1000
    """Fresh members drawn per generation (the search is the same at any size; this sets
    how often the best is reported, and the memory of one generation: P x params)."""


@dataclass
class NSESConfig(ESStepConfig):
    """NS-ES settings; the ES fields are OpenAI ES's (the paper's MuJoCo defaults)."""

    meta_population_size: int = 3
    """M: ES centers searching at once (paper: 3 on Atari, 5 on Humanoid)."""
    k: int = 10
    """Nearest archive neighbours a behavior's novelty averages over."""
    behavior: str = "auto"
    """Behavior characterisation: auto, final_obs, final_position or final_ram."""
    center_episodes: int = 1
    """Episodes an updated center plays to measure its return and behavior (paper: 1-5)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.meta_population_size >= 1,
            "algo.meta_population_size",
            f"must be at least 1, got {self.meta_population_size}",
            "an integer >= 1",
        )
        require(self.k >= 1, "algo.k", f"must be at least 1, got {self.k}", "an integer >= 1")
        require(
            self.behavior in BEHAVIORS,
            "algo.behavior",
            f"unknown behavior {self.behavior!r}",
            ", ".join(BEHAVIORS),
        )
        require(
            self.center_episodes >= 1,
            "algo.center_episodes",
            f"must be at least 1, got {self.center_episodes}",
            "an integer >= 1",
        )
        # The update mixes rank vectors of two signals; the paper shapes both by rank.
        require(
            self.fitness_shaping == "centered_ranks",
            "algo.fitness_shaping",
            f"the NS-ES family mixes centered ranks of returns and novelty, got {self.fitness_shaping!r}",
            "centered_ranks",
        )


@dataclass
class NSRAESConfig(NSESConfig):
    """NSRA-ES settings: NS-ES's plus the adaptation of the reward weight ``w``."""

    initial_reward_weight: float = 1.0
    """``w`` at the start (1: reward only)."""
    weight_delta: float = 0.05
    """How much ``w`` moves on an improvement or a stall."""
    stall_generations: int = 10
    """Generations without a better center return before ``w`` decreases."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            0.0 <= self.initial_reward_weight <= 1.0,
            "algo.initial_reward_weight",
            f"got {self.initial_reward_weight}",
            "a float in [0, 1]",
        )
        require(
            0.0 < self.weight_delta <= 1.0,
            "algo.weight_delta",
            f"got {self.weight_delta}",
            "a float in (0, 1]",
        )
        require(
            self.stall_generations >= 1,
            "algo.stall_generations",
            f"got {self.stall_generations}",
            "an integer >= 1",
        )
