"""Settings every quality-diversity algorithm has (``map_elites``, ``cma_mae``, ``pga_me``):
the behaviour descriptor, the archive's cells and range, the QD-score's offset; and those
of the algorithms that re-evaluate their elites on noisy tasks (``map_elites``,
``cma_mae``: :class:`ReevaluationConfig`). In a module that imports no torch, so the
command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuroplug.errors import require
from neuroplug.evaluation.behaviors import ALLOWED, is_known, resolve
from neuroplug.plugin_configs.bases import AlgorithmConfig

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec

ARCHIVES = ("grid", "cvt")


@dataclass
class ArchiveConfig(AlgorithmConfig):
    """An archive of elites over the behaviour descriptor (:mod:`neuroplug.evolution.archive`)."""

    behavior: str = "auto"
    """The descriptor (``neuroplug.evaluation.behaviors``): ``auto`` takes the env family's."""
    archive: str = "grid"
    """``grid`` (equal intervals per dimension) or ``cvt`` (Voronoi cells, for descriptors
    of many dimensions)."""
    cells: list[int] = field(default_factory=lambda: [32])
    """Grid: intervals per descriptor dimension (one number: the same for every
    dimension). CVT: one number, the cell count."""
    bounds: list[Any] | None = None
    """``[[low, high], ...]`` per descriptor dimension (one pair: the same for every
    dimension). Required on a real task; the synthetic contract check uses [-1, 1]."""
    init_sigma: float = 0.1
    """Std of the Gaussian added to every parameter of the first generation's fresh
    networks, so that their behaviours differ: neuroplug's networks start with near-zero
    outputs (OpenAI ES's small last layer), which suits a search around one point, not an
    archive (pyribs' users start from x0 plus noise the same way)."""
    qd_offset: float = 0.0
    """Subtracted from every elite's fitness in the QD-score (set it to the task's lowest
    return so every elite counts positively, as pyribs' ``qd_score_offset``)."""

    def check_task(self, env: EnvSpec) -> None:
        """The descriptor must be one ``env`` gives (``final_ram`` only on Atari, ...)."""
        resolve(self.behavior, env)

    def check(self) -> None:
        super().check()
        require(self.init_sigma >= 0, "algo.init_sigma", f"got {self.init_sigma}", "a float >= 0")
        require(self.archive in ARCHIVES, "algo.archive", f"got {self.archive!r}", "grid or cvt")
        require(
            is_known(self.behavior),
            "algo.behavior",
            f"got {self.behavior!r}",
            ALLOWED,
        )
        require(
            len(self.cells) >= 1 and all(int(size) >= 1 for size in self.cells),
            "algo.cells",
            f"got {self.cells}",
            "positive integers: intervals per dimension (grid) or the cell count (cvt)",
        )
        require(
            self.archive == "grid" or len(self.cells) == 1,
            "algo.cells",
            f"a CVT archive takes one cell count, got {self.cells}",
            "one integer, algo.cells=[1000]",
        )
        for low_high in self.bounds or []:
            require(
                len(low_high) == 2 and float(low_high[1]) > float(low_high[0]),
                "algo.bounds",
                f"{low_high} is not a range of positive width",
                "[low, high] with high > low for every descriptor dimension",
            )


REEVALUATION_SHARE = 0.1
"""``algo.reevaluate_every: null`` re-evaluates the elites whenever the offspring have
played ``1 / REEVALUATION_SHARE`` times the episodes a re-evaluation plays: re-evaluation
then costs about a tenth of the offspring's episodes, whatever the archive's size."""


@dataclass
class ReevaluationConfig(AlgorithmConfig):
    """Re-evaluation of an archive's elites in fresh episodes, so that a cell's fitness is
    the mean of every episode its elite played, not the luckiest single draw that won it
    (Archive-Sampling, Justesen et al. 2019; Flageat & Cully 2023):
    :mod:`neuroplug.evolution.reevaluation`."""

    reevaluation_episodes: int = 4
    """Episodes each elite plays in a re-evaluation (0: never re-evaluate)."""
    reevaluate_every: int | None = None
    """Generations between re-evaluations; null: whenever the offspring have played ten
    times the episodes a re-evaluation plays (about a tenth of the run's episodes, on an
    archive of any size)."""

    def check(self) -> None:
        super().check()
        require(
            self.reevaluation_episodes >= 0,
            "algo.reevaluation_episodes",
            f"got {self.reevaluation_episodes}",
            "an integer >= 0 (0: never re-evaluate the elites)",
        )
        require(
            self.reevaluate_every is None or self.reevaluate_every >= 1,
            "algo.reevaluate_every",
            f"got {self.reevaluate_every}",
            "null (automatic: about a tenth of the episodes) or an integer >= 1 "
            "(generations); algo.reevaluation_episodes=0 turns re-evaluation off",
        )

    @property
    def reevaluates(self) -> bool:
        """Whether the elites are ever re-evaluated."""
        return self.reevaluation_episodes > 0
