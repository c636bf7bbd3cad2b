"""The settings of ``algo=es`` (OpenAI ES) and of the ES step the novelty-search family
shares: their config schemas, beside :mod:`neuroplug_algorithms.es`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.algorithm_configs`` entry point ``es``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import AlgorithmConfig
from neuroplug.errors import require


@dataclass
class ESStepConfig(AlgorithmConfig):
    """Settings of the OpenAI-ES step (the paper's MuJoCo defaults).

    Low-rank perturbations (``perturbation: lowrank``, EGGROLL) are not the default, for
    any network size: at equal frames they learned no better on HalfCheetah and Breakout
    (``benchmarks/results/learning_curves``), though they run Atari faster on a CPU
    (``benchmarks/results/lowrank_inference.md``; ``lowrank_min_size: 4096`` includes the
    Nature CNN's convolutions).
    """

    population_size: int = 64
    sigma: float = 0.02
    """Std of the parameter perturbations."""
    learning_rate: float = 0.01
    """The optimizer's step size."""
    optimizer: str = "adam"
    """``adam`` (OpenAI ES), or ``sgd``: ``theta += learning_rate * (g - l2_coeff * theta)``
    with no state, the update of the LLM fine-tuning papers (Qiu et al. 2025; EGGROLL),
    whose checkpoint is the center alone (Adam keeps two moments as large as the model)."""
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

    def check(self) -> None:
        super().check()
        require(self.sigma > 0, "algo.sigma", f"must be positive, got {self.sigma}", "a float > 0")
        require(
            self.learning_rate > 0,
            "algo.learning_rate",
            f"must be positive, got {self.learning_rate}",
            "a float > 0",
        )
        require(self.l2_coeff >= 0, "algo.l2_coeff", f"got {self.l2_coeff}", "a float >= 0")
        require(
            self.optimizer in ("adam", "sgd"), "algo.optimizer", f"got {self.optimizer!r}",
            "adam, sgd",
        )  # fmt: skip
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
    """OpenAI ES (Salimans et al. 2017) settings: the paper's MuJoCo defaults; every field
    is the ES step's.

    The paper ran 1440+ workers; the population here is sized for one desktop CPU: raise
    it on bigger machines. On Atari the paper used a population of 5000 with the same
    sigma, learning rate and L2, and virtual batch norm, which ``net.vbn`` turns on by
    default for ``es`` on Atari (the start-up line says so; ``net.vbn=false`` turns it
    off): choose ``env=breakout`` (or another game) and set ``algo.population_size``
    yourself.
    """
