"""The settings of ``algo=map_elites`` (:mod:`neuroplug_algorithms.map_elites`), in a module
that imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug.evolution.archive_config import ArchiveConfig, ReevaluationConfig

VARIATIONS = ("iso_line", "gaussian")
"""The offspring operators ``algo.variation`` names."""


@dataclass
class MAPElitesConfig(ArchiveConfig, ReevaluationConfig):
    """MAP-Elites (Mouret & Clune 2015) with Iso+LineDD variation (Vassiliades & Mouret
    2018, their sigma_iso 0.005 and sigma_line 0.05); a batch of ``population_size``
    offspring per generation, the first of fresh networks; the elites re-evaluated in fresh
    episodes now and then (:class:`ReevaluationConfig`)."""

    population_size: int = 64
    """Offspring evaluated per generation (the first generation: fresh draws)."""
    iso_sigma: float = 0.005
    """Std of the isotropic Gaussian added to a parent (Iso+LineDD's sigma_iso)."""
    line_sigma: float = 0.05
    """Std of the step along the line to a second elite (Iso+LineDD's sigma_line)."""
    variation: str = "iso_line"
    """``iso_line`` (Iso+LineDD), or ``gaussian``: a parent plus ``sigma * eps(seed)``
    (the deep GA's mutation), each elite kept as its seed chain, so the checkpoint holds
    seeds, not weights, and members travel to Ray workers as seeds."""
    sigma: float = 0.02
    """``gaussian`` variation's mutation std."""

    def check(self) -> None:
        super().check()
        require(
            self.variation in VARIATIONS,
            "algo.variation",
            f"got {self.variation!r}",
            " or ".join(VARIATIONS),
        )
        require(self.sigma > 0, "algo.sigma", f"got {self.sigma}", "a float > 0")
        for name in ("iso_sigma", "line_sigma"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
