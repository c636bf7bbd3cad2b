"""``algo=map_elites``: an archive of the best policy per kind of behaviour.

Mouret & Clune (2015), "Illuminating search spaces by mapping elites", with the Iso+LineDD
variation of Vassiliades & Mouret (2018), "Discovering the Elite Hypervolume by Leveraging
Interspecies Correlation", GECCO::

    archive <- empty (cells over the descriptor's bounds: a grid, or CVT regions)
    generation 0: evaluate population_size fresh networks; add each to its cell
    every later generation:
        for each of population_size offspring:
            x_i, x_j <- two elites drawn uniformly from the occupied cells
            x' = x_i + sigma_iso N(0, I) + sigma_line (x_j - x_i) N(0, 1)       # Iso+LineDD
        evaluate them -> fitness f, descriptor b (means over episodes_per_member episodes)
        each offspring takes cell(b) if it is empty or its elite's fitness is below f
        when due: every elite plays reevaluation_episodes fresh episodes; its fitness and
            descriptor become the means over all its episodes; it goes back into the cell
            of its mean descriptor (neuroplug.evolution.reevaluation, Archive-Sampling)

    variation=gaussian instead (the deep GA's mutation, one parent):
        generation 0:  x = init(s_0) + init_sigma eps(s_1)         chain [s_0, s_1]
        later:         x' = x_i + sigma eps(s)                      chain of x_i + [s]

The archive is the result: the run deploys its best elite; ``algo/qd_score``,
``algo/coverage`` and ``algo/archive_best`` are logged every generation (and at each
re-evaluation ``algo/qd_score_reevaluated``, what the elites scored in their fresh
episodes) and the checkpoint holds every occupied cell (:mod:`neuroplug.evolution.archive`)
compactly, by how its elite was made, never by weights: with ``iso_line`` as nodes of a
lineage (each child its two parents' nodes, a seed and the line step's draw,
:mod:`neuroplug.evolution.lineage`), with ``gaussian`` as seed chains (the deep GA's
encoding). Both are replayed bit-identically on resume. The offspring are one population, so they act in one batched forward, alive
members only, on any scheduler.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm, lineage
from neuroplug.evolution.archive import Genome, build_archive, member_descriptors
from neuroplug.evolution.reevaluation import ElitesReevaluation
from neuroplug.population.members import Population
from neuroplug_algorithms import seed_chains
from neuroplug_algorithms.map_elites_config import MAPElitesConfig


class MAPElites(EvolutionAlgorithm):
    """MAP-Elites with Iso+LineDD variation over a grid or CVT archive."""

    config_class = MAPElitesConfig

    def __init__(self, config: MAPElitesConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.archive = build_archive(config, context)
        # The checkpoint holds genomes: the best elite is rebuilt on load, like every other.
        self.checkpoints_best_params = False
        self.lineage = (
            lineage.for_archive(config, self.num_params, self.fresh_params)
            if config.variation == "iso_line"
            else None
        )
        self._genomes: list[Genome] | None = None
        """The genomes of the population asked last (seed chains or lineage nodes)."""
        self.reevaluation = ElitesReevaluation(config, self.archive)

    def behavior(self) -> str | None:
        return self.config.behavior

    def episodes_per_member(self) -> int:
        if self.reevaluation.open:
            return self.reevaluation.episodes
        return self.config.episodes_per_member

    def _ask(self) -> Population:
        if self.reevaluation.open:
            return self.reevaluation.elites()
        config, occupied = self.config, self.archive.occupied
        size = config.population_size
        if self.lineage is None:
            return self._gaussian_offspring(size, occupied)
        if len(occupied) == 0:
            ids, members = self.lineage.fresh(self.draw_seeds(size), self.draw_seeds(size))
        else:
            ids, members = lineage.iso_line_offspring(self.lineage, self.archive, size, self.rng)
        self._genomes = ids.tolist()
        return Population.dense(members)

    def _gaussian_offspring(self, size: int, occupied: np.ndarray) -> Population:
        """Parents (fresh draws at first, then uniform elites) plus ``scale * eps(seed)``,
        as a Population of bases and seeds; their chains are remembered for the archive."""
        if len(occupied) == 0:
            starts, seeds = self.draw_seeds(size), self.draw_seeds(size)
            bases = torch.stack([self.fresh_params(int(seed)) for seed in starts.tolist()])
            index, scale = torch.arange(size), self.config.init_sigma
            self._genomes = [[a, b] for a, b in zip(starts.tolist(), seeds.tolist(), strict=True)]
        else:
            parents = occupied[self.rng.integers(0, len(occupied), size=size)]
            unique, inverse = np.unique(parents, return_inverse=True)
            seeds = self.draw_seeds(size)
            bases = self.archive.params[torch.from_numpy(unique)]
            index, scale = torch.from_numpy(inverse.astype(np.int64)), self.config.sigma
            genomes = self.archive.genomes
            self._genomes = [
                genomes[parent] + [seed]
                for parent, seed in zip(parents.tolist(), seeds.tolist(), strict=True)
            ]
        return Population(
            bases=bases,
            base_index=index,
            scale=torch.full((size,), float(scale)),
            seed=seeds,
        )

    def build(self, genomes: list[Genome]) -> torch.Tensor:
        """Weights of genomes: lineage nodes replayed, or seed chains ``init(s_0)``, then
        ``init_sigma`` for the first mutation and ``sigma`` for every later one."""
        if self.lineage is not None:
            return self.lineage.build(genomes)
        config = self.config
        return seed_chains.build(
            genomes,
            self.num_params,
            self.fresh_params,
            lambda depth: config.init_sigma if depth == 1 else config.sigma,
        )

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        if self.reevaluation.open:
            stats = self.reevaluation.fold(fitness, result, self.config.qd_offset)
        else:
            members = population.materialize(device="cpu")
            descriptors = member_descriptors(result)
            episodes = result.returns.shape[1]
            stats = self.archive.add(members, fitness, descriptors, self._genomes, episodes)
            if self.reevaluation.due(self.generation + 1, result.episodes):
                self.continue_generation()
        if self.lineage is not None:
            lineage.prune(self.lineage, self.archive)
            stats["lineage_nodes"] = float(len(self.lineage))
        self.best_params = self.archive.params[self.archive.best()].clone()
        return {**self.archive.metrics(self.config.qd_offset), **stats}

    def policy_params(self) -> torch.Tensor:
        return self.best_params.clone()

    def _state(self) -> dict[str, Any]:
        state = {
            "archive": self.archive.state_dict(compact=True),
            "reevaluation": self.reevaluation.state_dict(),
        }
        if self.lineage is not None:
            state["lineage"] = self.lineage.state_dict()
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        if self.lineage is not None:
            lineage.load_archive(self.lineage, self.archive, state)
        else:
            self.archive.load_state_dict(state["archive"], self.build)
        self.reevaluation.load_state_dict(state["reevaluation"])
        if len(self.archive.occupied):
            self.best_params = self.archive.params[self.archive.best()].clone()
