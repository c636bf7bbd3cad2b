"""The base class of evolutionary algorithms: what every one of them does the same way.

A subclass writes ``_ask`` (the next population) and ``_tell`` (learn from its fitness)
and lists its own state in ``_state``/``_load_state``. The base owns the seeded RNG,
the generation counter, best-so-far tracking, NaN-safe fitness and checkpoint state.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from neuroplug.api import Algorithm, AlgorithmConfig, AlgorithmContext, EvaluationResult
from neuroplug.evolution.rounds import round_marker
from neuroplug.evolution.shaping import sanitize_fitness
from neuroplug.population.lowrank import LowRank, perturbation_vectors
from neuroplug.population.members import Population, draw_seeds
from neuroplug.population.noise import noise_vectors
from neuroplug.runtime.seeds import algorithm_rng


class EvolutionAlgorithm(Algorithm):
    """Ask/tell around a population, with reproducible randomness and checkpoints.

    What a subclass gets: ``self.rng`` (a numpy Generator seeded from the run seed, in the
    checkpoint), ``self.num_params``, ``self.context`` (network, initial parameters,
    fresh draws), :meth:`draw_seeds`, :meth:`fresh_params`, ``self.best_params`` /
    ``self.best_fitness`` kept up to date before ``_tell`` runs, NaN-safe fitness, and the
    generation counter (advanced after ``_tell`` unless it called
    :meth:`~neuroplug.api.Algorithm.continue_generation`).
    """

    checkpoints_best_params: ClassVar[bool] = True
    """Whether checkpoints hold the best member's weights. Algorithms with compact genomes
    (the GA's seed chains) set it False and rebuild ``best_params`` in ``_load_state``."""

    def __init__(self, config: AlgorithmConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.num_params = context.num_params
        self.rng = algorithm_rng(context.seed)
        self.best_fitness = -np.inf
        self.best_params = context.initial_params.detach().clone().float()
        self.nonfinite_fitness = 0

    def fresh_params(self, seed: int) -> torch.Tensor:
        """A new draw from the network's initialisation distribution for ``seed``."""
        return self.context.fresh_params(seed)

    def draw_seeds(self, count: int) -> torch.Tensor:
        """``count`` fresh noise seeds from the algorithm's RNG."""
        return draw_seeds(self.rng, count)

    def ask(self) -> Population:
        return self._ask()

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        fitness, replaced = sanitize_fitness(result.fitness)
        self.nonfinite_fitness += replaced
        leader = int(np.argmax(fitness))
        if fitness[leader] > self.best_fitness:
            self.best_fitness = float(fitness[leader])
            self.best_params = population.materialize(torch.tensor([leader]), device="cpu")[0]
        before = round_marker(self)
        stats = self._tell(population, fitness, result)
        if round_marker(self) == before:  # _tell did not ask for another round
            self.generation += 1
        stats.update(
            best_fitness_ever=self.best_fitness, nonfinite_fitness=float(self.nonfinite_fitness)
        )
        return stats

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "rng": self.rng.bit_generator.state,
            "best_fitness": self.best_fitness,
            "nonfinite_fitness": self.nonfinite_fitness,
            "algorithm": self._state(),
        } | ({"best_params": self.best_params.clone()} if self.checkpoints_best_params else {})

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self.rng.bit_generator.state = state["rng"]
        self.best_fitness = float(state["best_fitness"])
        if self.checkpoints_best_params:
            self.best_params = state["best_params"].clone()
        self.nonfinite_fitness = int(state["nonfinite_fitness"])
        self._load_state(state["algorithm"])

    @abstractmethod
    def _ask(self) -> Population:
        """The next population."""

    @abstractmethod
    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        """Learn from the finite ``(P,)`` fitness of ``population``; return stats.

        ``result`` carries the rest of the evaluation (per-episode returns, behaviors).
        """

    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """This algorithm's own state (tensors and plain values)."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_state` returned."""


NOISE_CHUNK = 64
"""Members whose noise is regenerated at once in an update: bounds the memory to
``NOISE_CHUNK x D`` whatever the population."""


def weighted_noise_sums(
    seeds: torch.Tensor,
    terms: Sequence[tuple[torch.Tensor, int]],
    dimension: int,
    lowrank: LowRank | None = None,
    scale: torch.Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> list[torch.Tensor]:
    """``sum_k w_k e_k^p`` for each ``(w, p)`` of ``terms``, with ``e_k = scale * eps(seeds[k])``
    (``eps``: the members' perturbation direction, a low-rank product where the population
    used ``lowrank``), regenerating ``eps`` from the seeds :data:`NOISE_CHUNK` members at a
    time: the update of every strategy that describes its members by seeds (ES's
    gradient, the NES family's and PGPE's first and second moments). ``(D,)`` each, in
    ``dtype``."""
    if lowrank is not None and lowrank.matrices and scale is None:
        if all(power in (1, 2) for _, power in terms):
            return _factored_sums(seeds, terms, dimension, lowrank, dtype)
    sums = [torch.zeros(dimension, dtype=dtype) for _ in terms]
    for start in range(0, len(seeds), NOISE_CHUNK):
        chunk = slice(start, start + NOISE_CHUNK)
        noise = perturbation_vectors(seeds[chunk], dimension, lowrank).to(dtype)
        if scale is not None:
            noise = scale * noise
        for total, (weights, power) in zip(sums, terms, strict=True):
            total += weights[chunk] @ (noise if power == 1 else _power(noise, power))
    return sums


FACTOR_CHUNK = 4096
"""Members whose low-rank factors are regenerated at once in a factored update."""


def _factored_sums(
    seeds: torch.Tensor,
    terms: Sequence[tuple[torch.Tensor, int]],
    dimension: int,
    lowrank: LowRank,
    dtype: torch.dtype,
) -> list[torch.Tensor]:
    """:func:`weighted_noise_sums` of a low-rank population without its members' matrices
    (EGGROLL's update): for a matrix, ``sum_k w_k A_k B_kᵀ / sqrt(r)`` is one product of the
    stacked factors, ``[w_1 A_1, ..., w_P A_P] [B_1, ..., B_P]ᵀ / sqrt(r)``, and the
    elementwise square's sum ``sum_k w_k (A_k B_kᵀ)^2 / r`` the same product of the
    factors' row-wise Kronecker squares (``(A ∗ A)(B ∗ B)ᵀ``, rank r²): exact, and each
    member costs its ``r (rows + cols)`` noise numbers, never ``rows x cols``. The other
    entries (biases, small matrices) are summed from their own slices of the noise."""
    sums = [torch.zeros(dimension, dtype=dtype) for _ in terms]
    rank = lowrank.rank
    covered, cursor = [], 0
    for matrix in sorted(lowrank.matrices, key=lambda each: each.offset):
        covered.append((cursor, matrix.offset))
        cursor = matrix.offset + matrix.rows * matrix.cols
    covered.append((cursor, dimension))
    for start, stop in covered:  # dense entries: their own noise
        if stop <= start:
            continue
        for first in range(0, len(seeds), NOISE_CHUNK):
            chunk = slice(first, first + NOISE_CHUNK)
            noise = noise_vectors(seeds[chunk], dimension, start, stop).to(dtype)
            for total, (weights, power) in zip(sums, terms, strict=True):
                values = noise if power == 1 else noise * noise
                total[start:stop] += weights[chunk].to(dtype) @ values
    for matrix in lowrank.matrices:
        rows, cols, size = matrix.rows, matrix.cols, matrix.rows * matrix.cols
        stop = matrix.offset + (rows + cols) * rank
        for first in range(0, len(seeds), FACTOR_CHUNK):
            chunk = slice(first, first + FACTOR_CHUNK)
            noise = noise_vectors(seeds[chunk], dimension, matrix.offset, stop).to(dtype)
            count = len(noise)
            factor_a = noise[:, : rows * rank].reshape(count, rows, rank)
            factor_b = noise[:, rows * rank :].reshape(count, cols, rank)
            for total, (weights, power) in zip(sums, terms, strict=True):
                a, b = factor_a, factor_b
                if power == 2:  # row-wise Kronecker squares: (A Bᵀ)^2 = (A ∗ A)(B ∗ B)ᵀ
                    a = (a.unsqueeze(-1) * a.unsqueeze(-2)).reshape(count, rows, rank * rank)
                    b = (b.unsqueeze(-1) * b.unsqueeze(-2)).reshape(count, cols, rank * rank)
                weighted = a * weights[chunk].to(dtype).view(-1, 1, 1)
                # (rows, P r) @ (P r, cols): every member's product summed in one matmul.
                product = (
                    weighted.transpose(0, 1).reshape(rows, -1)
                    @ b.transpose(0, 1).reshape(cols, -1).T
                )
                total[matrix.offset : matrix.offset + size] += product.reshape(-1) / rank ** (
                    power / 2
                )
    return sums


def _power(noise: torch.Tensor, power: int) -> torch.Tensor:
    return noise * noise if power == 2 else noise**power
