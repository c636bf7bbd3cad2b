"""The settings of ``algo=cma_mae`` (:mod:`neuroplug_algorithms.cma_mae`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.evolution.archive_config import ArchiveConfig, ReevaluationConfig


@dataclass
class CMAMAEConfig(ArchiveConfig, ReevaluationConfig):
    """CMA-MAE (Fontaine & Nikolaidis 2023): CMA-ES emitters ranked by improvement over an
    archive whose thresholds learn at ``archive_learning_rate`` (0.01, the paper's). The
    emitters are separable CMA-ES (a diagonal covariance, O(D)), so any network fits. The
    result archive's elites are re-evaluated now and then (:class:`ReevaluationConfig`)."""

    emitters: int = 4
    """CMA-ES instances, each drawing ``emitter_batch`` solutions per generation."""
    emitter_batch: int = 16
    """Solutions per emitter per generation (CMA-ES's lambda)."""
    population_size: int = 0
    """The batch, ``emitters x emitter_batch`` (0 is set to that product)."""
    sigma0: float = 0.05
    """Each emitter's initial step size, around an elite (a fresh network at first)."""
    archive_learning_rate: float = 0.01
    """alpha: a cell's threshold moves this share of the way to each accepted fitness (1:
    CMA-ME's plain elitism; 0: CMA-ES ignoring the archive)."""
    threshold_min: float | None = None
    """Every cell's starting threshold; null: ``algo.qd_offset`` (the task's lowest
    fitness, which the paper uses for both)."""

    population_from_dimension = True  # population_size 0 is allowed (the product above)

    def check(self) -> None:
        super().check()
        for name in ("emitters", "emitter_batch"):
            value = getattr(self, name)
            require(value >= 2 if name == "emitter_batch" else value >= 1, f"algo.{name}",
                    f"got {value}", "an integer >= 2 (CMA-ES needs two solutions to rank)"
                    if name == "emitter_batch" else "an integer >= 1")  # fmt: skip
        # 0 means the batch: filled in here, where the config is built, because the engine
        # sizes a generation by this field.
        if self.population_size == 0:
            self.population_size = self.emitters * self.emitter_batch
        require(
            self.population_size == self.emitters * self.emitter_batch,
            "algo.population_size",
            f"got {self.population_size} with {self.emitters} emitters of {self.emitter_batch}",
            "0 (emitters x emitter_batch), or set algo.emitters and algo.emitter_batch",
        )
        require(self.sigma0 > 0, "algo.sigma0", f"got {self.sigma0}", "a float > 0")
        require(
            0 <= self.archive_learning_rate <= 1,
            "algo.archive_learning_rate",
            f"got {self.archive_learning_rate}",
            "a float in [0, 1]",
        )

    @property
    def batch(self) -> int:
        """Solutions per generation."""
        return self.emitters * self.emitter_batch

    @property
    def start_threshold(self) -> float:
        """The cells' starting threshold."""
        return self.qd_offset if self.threshold_min is None else self.threshold_min
