"""Quality-diversity archives: descriptor space cut into cells, each keeping its best member.

A *grid* cuts every descriptor dimension's range into equal intervals (MAP-Elites, Mouret &
Clune 2015); a *CVT* archive's cells are the Voronoi regions of centroids spread over the
range by k-means on uniform samples (Vassiliades et al. 2018), for descriptors of more than
two or three dimensions, where a grid's cell count explodes. A descriptor outside the
range falls into the nearest cell at the edge.

Used by ``map_elites``, ``cma_mae`` and ``pga_me`` (two plugin distributions), so it lives
here beside the other shared machinery of evolution, as the replay buffer does for learners.

The archive keeps, per cell, the elite's fitness, descriptor and parameters, and how many
episodes the fitness and descriptor are the mean of; QD metrics (QD-score, coverage, best
fitness) are read from it. Fresh episodes of its elites fold into those means
(:meth:`Archive.fold`, the re-evaluation of :mod:`neuroplug.evolution.reevaluation`). Its
checkpoint holds the occupied cells only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.errors import ConfigError
from neuroplug.evaluation.behaviors import resolve
from neuroplug.evolution.archive_config import ArchiveConfig
from neuroplug.runtime.devices import refuse_unless_it_fits, whole_count

Genome = list[int] | int
"""How an algorithm describes an elite compactly: a seed chain (a list of seeds), or the
id of a node of its :class:`~neuroplug.evolution.lineage.Lineage`."""


def _plain(genome: Any) -> Genome:
    """A genome read from a checkpoint as Python ints."""
    if isinstance(genome, list | tuple | np.ndarray):
        return [int(seed) for seed in genome]
    return int(genome)


def member_descriptors(result: EvaluationResult) -> np.ndarray:
    """``(P, d)``: each member's descriptor, the mean over its episodes of the behaviours
    the evaluation returned."""
    if result.behaviors is None:
        raise RuntimeError("the scheduler returned no behaviors for a quality-diversity archive")
    return result.behaviors.reshape(*result.behaviors.shape[:2], -1).mean(axis=1)


class Archive:
    """Cells of descriptor space, each with its elite (the best member that landed there)."""

    too_large_advice = ""
    """Added to the refusal of an archive that does not fit in memory."""

    def __init__(self, cells: int, num_params: int, bounds: np.ndarray) -> None:
        refuse_unless_it_fits(
            "algo.cells",
            cells * num_params * 4,
            f"{whole_count(cells)} cells of {num_params:,}-parameter elites",
            lambda room: (
                f"at most {room // (num_params * 4):,} cells, or a smaller net"
                + self.too_large_advice
            ),
        )
        self.cells = cells
        self.bounds = np.asarray(bounds, dtype=np.float64)
        self.fitness = np.full(cells, -np.inf)
        self.descriptors = np.zeros((cells, len(self.bounds)))
        self.params = torch.zeros(cells, num_params)
        self.episodes = np.zeros(cells, dtype=np.int64)
        """How many episodes each elite's fitness and descriptor are the mean of."""
        self.names: tuple[str, ...] | None = None
        """A label per descriptor dimension (:meth:`Behavior.dimension_names`), where the
        archive was built for a task: plots name their axes with them."""
        self.genomes: list[Genome | None] | None = None
        """Each cell's elite as its genome, where the algorithm describes its members so
        (MAP-Elites: a seed chain, or a node of :mod:`neuroplug.evolution.lineage`): a
        compact checkpoint keeps these, not weights."""

    def index(self, descriptors: np.ndarray) -> np.ndarray:
        """The cell of each descriptor ``(n, d)``."""
        raise NotImplementedError

    @property
    def occupied(self) -> np.ndarray:
        """Indices of the cells that hold an elite."""
        return np.flatnonzero(np.isfinite(self.fitness))

    def add(
        self,
        params: torch.Tensor,
        fitness: np.ndarray,
        descriptors: np.ndarray,
        genomes: list[Genome] | None = None,
        episodes: np.ndarray | int = 1,
    ) -> dict:
        """Offer members ``(n, D)`` with their fitness and descriptors, each the mean of
        ``episodes`` episodes (and, optionally, their genomes: seed chains or lineage
        nodes): each takes its cell if the cell is empty or holds a worse elite (the best
        of the batch per cell). Returns how many filled new cells and how many improved
        occupied ones."""
        episodes = np.broadcast_to(np.asarray(episodes, dtype=np.int64), fitness.shape)
        cells = self.index(descriptors)
        order = np.argsort(-fitness, kind="stable")  # the batch's best first per cell
        _, first = np.unique(cells[order], return_index=True)
        winners = order[first]
        better = fitness[winners] > self.fitness[cells[winners]]
        winners = winners[better]
        targets = cells[winners]
        new = int(np.isinf(self.fitness[targets]).sum())
        self.fitness[targets] = fitness[winners]
        self.descriptors[targets] = descriptors[winners]
        self.episodes[targets] = episodes[winners]
        self.params[torch.from_numpy(targets)] = params[torch.from_numpy(winners)].float()
        if genomes is not None:
            if self.genomes is None:
                self.genomes = [None] * self.cells
            for winner, target in zip(winners.tolist(), targets.tolist(), strict=True):
                self.genomes[target] = genomes[winner]
        return {"new_cells": new, "improved_cells": len(targets) - new}

    def metrics(self, qd_offset: float) -> dict[str, float]:
        """QD-score (``sum(fitness - qd_offset)`` over occupied cells), coverage, best."""
        held = self.fitness[self.occupied]
        return {
            **self._scores(held, qd_offset),
            "archive_best": float(held.max()) if len(held) else float("nan"),
            "archive_size": float(len(held)),
        }

    def metrics_of(
        self, fitness: np.ndarray, descriptors: np.ndarray, qd_offset: float
    ) -> dict[str, float]:
        """QD-score and coverage of an archive of these cells that holds only the members
        given, by their own ``descriptors`` (the best per cell): with the elites' fresh
        evaluations, Flageat & Cully's (2023) corrected archive."""
        best = np.full(self.cells, -np.inf)
        np.maximum.at(best, self.index(descriptors), fitness)
        return self._scores(best[np.isfinite(best)], qd_offset)

    def _scores(self, held: np.ndarray, qd_offset: float) -> dict[str, float]:
        """The QD-score and coverage of the fitness ``held`` in occupied cells."""
        return {
            "qd_score": float(np.sum(held - qd_offset)) if len(held) else 0.0,
            "coverage": len(held) / self.cells,
        }

    def fold(
        self, cells: np.ndarray, fitness: np.ndarray, descriptors: np.ndarray, episodes: int
    ) -> dict[str, float]:
        """Fold fresh evaluations of the elites of ``cells`` (``fitness`` and
        ``descriptors``, each the mean of ``episodes`` new episodes) into their means over
        every episode they played, then put them back by their new descriptors: an elite
        whose mean descriptor left its cell competes for the cell it entered (the best
        mean takes it), as Archive-Sampling re-inserts its elites (Justesen et al. 2019;
        Flageat & Cully 2023). Returns how many elites moved to another cell and how many
        lost their place (to a better elite that moved in, or moved into a better one)."""
        cells = np.asarray(cells, dtype=np.int64)
        held = len(self.occupied)
        after = self.episodes[cells] + episodes
        weight = (episodes / after)[:, None]
        # Means over every episode: (n f + k f_new) / (n + k), descriptors alike.
        means = self.fitness[cells] + weight[:, 0] * (fitness - self.fitness[cells])
        places = self.descriptors[cells] + weight * (descriptors - self.descriptors[cells])
        params = self.params[torch.from_numpy(cells)].clone()
        genomes = None if self.genomes is None else [self.genomes[cell] for cell in cells]
        self.fitness[cells] = -np.inf
        self.episodes[cells] = 0
        if self.genomes is not None:
            for cell in cells.tolist():
                self.genomes[cell] = None
        self.add(params, means, places, genomes, after)
        return {
            "moved_elites": float(np.sum(self.index(places) != cells)),
            "lost_elites": float(held - len(self.occupied)),
        }

    def best(self) -> int:
        """The cell of the best elite (the archive must hold one)."""
        return int(np.argmax(self.fitness))

    def state_dict(self, compact: bool = False) -> dict[str, Any]:
        """The occupied cells: their indices, fitness, descriptors and elites (``compact``:
        the elites' genomes instead of their weights)."""
        cells = self.occupied
        state = {
            "cells": cells,
            "fitness": self.fitness[cells],
            "descriptors": self.descriptors[cells],
            "episodes": self.episodes[cells],
            "bounds": self.bounds.copy(),
            "size": self.cells,
        }
        if self.names is not None:
            state["names"] = list(self.names)
        if compact:
            state["genomes"] = [self.genomes[cell] for cell in cells.tolist()]
        else:
            state["params"] = self.params[torch.from_numpy(cells)].clone()
        return state

    def load_state_dict(
        self,
        state: dict[str, Any],
        build: Callable[[list[Genome]], torch.Tensor] | None = None,
    ) -> None:
        """Restore :meth:`state_dict` into an empty archive of the same shape; a compact
        one's weights are ``build(genomes)``."""
        cells = np.asarray(state["cells"], dtype=np.int64)
        self.fitness[cells] = state["fitness"]
        self.descriptors[cells] = state["descriptors"]
        self.episodes[cells] = state["episodes"]
        if "genomes" in state:
            genomes = [_plain(genome) for genome in state["genomes"]]
            self.genomes = [None] * self.cells
            for cell, genome in zip(cells.tolist(), genomes, strict=True):
                self.genomes[cell] = genome
            if build is None:
                raise ValueError("a compact archive (genomes) needs build() to load")
            params = build(genomes) if genomes else torch.zeros(0, self.params.shape[1])
        else:
            params = state["params"]
        self.params[torch.from_numpy(cells)] = params


class GridArchive(Archive):
    """Equal intervals per dimension: ``shape[k]`` of them over ``bounds[k]``."""

    too_large_advice = (
        "; a grid grows as cells^dimensions: for a descriptor of many dimensions, "
        "algo.archive=cvt with algo.cells=[N] centroids"
    )

    def __init__(self, shape: list[int], num_params: int, bounds: np.ndarray) -> None:
        super().__init__(math.prod(shape), num_params, bounds)
        self.shape = tuple(int(size) for size in shape)

    def state_dict(self, compact: bool = False) -> dict[str, Any]:
        """The occupied cells and the grid's shape (for a heat map)."""
        return {**super().state_dict(compact), "shape": np.asarray(self.shape)}

    def index(self, descriptors: np.ndarray) -> np.ndarray:
        low, high = self.bounds[:, 0], self.bounds[:, 1]
        scaled = (np.asarray(descriptors, dtype=np.float64) - low) / (high - low)
        sizes = np.asarray(self.shape)
        coordinates = np.clip(np.floor(scaled * sizes).astype(np.int64), 0, sizes - 1)
        return np.ravel_multi_index(tuple(coordinates.T), self.shape)


class CVTArchive(Archive):
    """Voronoi cells of ``cells`` centroids: k-means (Lloyd's iterations) on ``samples``
    uniform points of the bounds, seeded, so a resumed run rebuilds the same cells."""

    def __init__(
        self,
        cells: int,
        num_params: int,
        bounds: np.ndarray,
        seed: int,
        samples: int = 25_000,
        iterations: int = 20,
    ) -> None:
        super().__init__(cells, num_params, bounds)
        rng = np.random.default_rng(seed)
        low, high = self.bounds[:, 0], self.bounds[:, 1]
        points = torch.from_numpy(rng.uniform(low, high, (max(samples, cells), len(low))))
        centroids = points[torch.from_numpy(rng.choice(len(points), cells, replace=False))]
        for _ in range(iterations):
            nearest = torch.cdist(points, centroids).argmin(dim=1)
            sums = torch.zeros_like(centroids).index_add_(0, nearest, points)
            counts = torch.bincount(nearest, minlength=cells).unsqueeze(1)
            centroids = torch.where(counts > 0, sums / counts.clamp(min=1), centroids)
        self.centroids = centroids

    def index(self, descriptors: np.ndarray) -> np.ndarray:
        points = torch.from_numpy(np.asarray(descriptors, dtype=np.float64))
        return torch.cdist(points, self.centroids).argmin(dim=1).numpy()

    def state_dict(self, compact: bool = False) -> dict[str, Any]:
        """The occupied cells and the centroids (the cells' geometry travels with them)."""
        return {**super().state_dict(compact), "centroids": self.centroids.clone()}

    def load_state_dict(
        self,
        state: dict[str, Any],
        build: Callable[[list[Genome]], torch.Tensor] | None = None,
    ) -> None:
        self.centroids = state["centroids"].clone()
        super().load_state_dict(state, build)


SYNTHETIC_DIMENSIONS = 2
"""Without an env (the contract check) the descriptor is two-dimensional."""


def build_archive(config: ArchiveConfig, context: AlgorithmContext) -> Archive:
    """The configured archive over the task's descriptor, refused in one line where the
    bounds do not match it."""
    if context.env is None:
        dimensions = SYNTHETIC_DIMENSIONS
        bounds = config.bounds or [[-1.0, 1.0]]
    else:
        behavior = resolve(config.behavior, context.env)
        dimensions = behavior.size
        if config.bounds is None and behavior.bounds is not None:
            bounds = [list(pair) for pair in behavior.bounds]
        elif config.bounds is None:
            raise ConfigError(
                "algo.bounds",
                f"the {_descriptor_name(config.behavior, behavior.name)} descriptor of "
                f"{context.env.task_id} has {dimensions} "
                "dimension(s) and no known range",
                "[[low, high]] per dimension (one pair for all), e.g. algo.bounds=[[-10,10]]",
            )
        else:
            bounds = config.bounds
    if len(bounds) == 1:
        bounds = bounds * dimensions
    if len(bounds) != dimensions:
        raise ConfigError(
            "algo.bounds",
            f"{len(bounds)} ranges for a {dimensions}-dimensional descriptor",
            f"{dimensions} pairs [low, high], or one for all",
        )
    bounds = np.asarray(bounds, dtype=np.float64)
    if config.archive == "cvt":
        archive = CVTArchive(int(config.cells[0]), context.num_params, bounds, context.seed)
    else:
        shape = list(config.cells) * dimensions if len(config.cells) == 1 else list(config.cells)
        if len(shape) != dimensions:
            raise ConfigError(
                "algo.cells",
                f"{len(shape)} grid sizes for a {dimensions}-dimensional descriptor",
                f"{dimensions} integers, or one for all",
            )
        archive = GridArchive(shape, context.num_params, bounds)
    if context.env is not None:
        archive.names = behavior.dimension_names()
    return archive


def _descriptor_name(configured: str, resolved: str) -> str:
    """``auto (final_obs)`` where ``algo.behavior=auto`` chose, else the configured name."""
    return f"{configured} ({resolved})" if configured != resolved else configured
