"""Re-evaluating an archive's elites: on a noisy task a cell's fitness is what its elite
does on average, not the luckiest draw that won it the cell.

Every episode is seeded apart, so a member's one evaluation is a draw, and an archive that
keeps the best draw per cell keeps the luckiest: its QD-score overstates what its elites
do when replayed (the winner's curse of quality diversity in uncertain domains, Flageat
& Cully 2023, "Uncertain Quality-Diversity: Evaluation Methodology and New Methods for
Quality-Diversity in Uncertain Domains", IEEE TEVC). Archive-Sampling (Justesen,
Risi & Mouret 2019, "MAP-Elites for Noisy Domains by Adaptive Sampling", GECCO) answers
by re-evaluating the elites and keeping, per elite, the mean over all its episodes::

    after a generation's offspring entered the archive, when a re-evaluation is due:
        every elite e plays k fresh episodes -> f_e, b_e (means over the k)
        reported: the QD-score and coverage of an empty archive holding the elites at
                  (f_e, b_e), the best per cell (Flageat & Cully's corrected archive)
        n_e <- n_e + k;  F_e <- F_e + k/n_e (f_e - F_e);  B_e <- B_e + k/n_e (b_e - B_e)
        every elite goes back into the cell of B_e; the best F takes a cell

Here the elites are one population: a second round of the generation
(:meth:`~neuroplug.api.Algorithm.continue_generation`), played by the run's scheduler
like the offspring, with the round's own episode seeds. Departures from Archive-Sampling:
it re-evaluates every generation, here every ``algo.reevaluate_every`` generations (by
default as often as keeps the cost to about a tenth of the episodes); it keeps a window
of the last evaluations, here the mean of all of them. An offspring still competes with
the mean of its ``algo.episodes_per_member`` episodes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import EvaluationResult
from neuroplug.evolution.archive import Archive, member_descriptors
from neuroplug.evolution.archive_config import REEVALUATION_SHARE, ReevaluationConfig
from neuroplug.population.members import Population


class ElitesReevaluation:
    """When an archive's elites are re-evaluated, and what their episodes change.

    An algorithm asks :meth:`due` after its offspring's round; where it says yes, the
    algorithm calls ``continue_generation()``, asks :meth:`elites` as its next population
    (``reevaluation_episodes`` each, :attr:`open` meanwhile) and hands their evaluation to
    :meth:`fold`.
    """

    def __init__(self, config: ReevaluationConfig, archive: Archive) -> None:
        self.config = config
        self.archive = archive
        self.episodes_since = 0
        """Offspring episodes played since the last re-evaluation (the automatic schedule's
        clock; checkpointed)."""
        self._cells: np.ndarray | None = None
        """The cells whose elites are being re-evaluated (never checkpointed: checkpoints
        fall between generations)."""

    @property
    def open(self) -> bool:
        """Whether the next round is a re-evaluation."""
        return self._cells is not None

    @property
    def episodes(self) -> int:
        """Episodes each elite plays in a re-evaluation."""
        return self.config.reevaluation_episodes

    def due(self, completed: int, offspring_episodes: int) -> bool:
        """After generation ``completed``'s offspring (``offspring_episodes`` of them): whether
        the elites are re-evaluated now; if so, the re-evaluation is open."""
        self.episodes_since += offspring_episodes
        occupied = self.archive.occupied
        if not self.config.reevaluates or len(occupied) == 0:
            return False
        every = self.config.reevaluate_every
        if every is None:
            cost = len(occupied) * self.episodes
            due = self.episodes_since >= math.ceil(cost / REEVALUATION_SHARE)
        else:
            due = completed % every == 0
        if due:
            self._cells = occupied
        return due

    def elites(self) -> Population:
        """The elites to re-evaluate, as a population (one batched forward, any scheduler)."""
        return Population.dense(self.archive.params[torch.from_numpy(self._cells)])

    def fold(
        self, fitness: np.ndarray, result: EvaluationResult, qd_offset: float
    ) -> dict[str, float]:
        """Fold the elites' fresh episodes into their means; the stats of the re-evaluation:
        the corrected archive's QD-score and coverage, the archive's QD-score before,
        the elites that moved or lost their place, and the mean episodes behind an elite."""
        cells, self._cells = self._cells, None
        self.episodes_since = 0
        descriptors = member_descriptors(result)
        fresh = self.archive.metrics_of(fitness, descriptors, qd_offset)
        before = self.archive.metrics(qd_offset)["qd_score"]
        moved = self.archive.fold(cells, fitness, descriptors, self.episodes)
        return {
            "qd_score_reevaluated": fresh["qd_score"],
            "coverage_reevaluated": fresh["coverage"],
            "qd_score_before_reevaluation": before,
            "reevaluated_elites": float(len(cells)),
            **moved,
            "episodes_per_elite": float(self.archive.episodes[self.archive.occupied].mean()),
        }

    def state_dict(self) -> dict[str, Any]:
        """The automatic schedule's clock."""
        return {"episodes_since": self.episodes_since}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.episodes_since = int(state["episodes_since"])
        self._cells = None
