"""The settings of ``algo=map_elites`` (:mod:`neuroplug_algorithms.map_elites`), in a module
that imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.archive_config import ArchiveConfig
from neuroplug.errors import require


@dataclass
class MAPElitesConfig(ArchiveConfig):
    """MAP-Elites (Mouret & Clune 2015) with Iso+LineDD variation (Vassiliades & Mouret
    2018, their sigma_iso 0.005 and sigma_line 0.05); a batch of ``population_size``
    offspring per generation, the first of fresh networks."""

    population_size: int = 64
    """Offspring evaluated per generation (the first generation: fresh draws)."""
    iso_sigma: float = 0.005
    """Std of the isotropic Gaussian added to a parent (Iso+LineDD's sigma_iso)."""
    line_sigma: float = 0.05
    """Std of the step along the line to a second elite (Iso+LineDD's sigma_line)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("iso_sigma", "line_sigma"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
