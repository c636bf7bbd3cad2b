"""The base class of evolutionary algorithms: what every one of them does the same way.

A subclass writes ``_ask`` (the next population) and ``_tell`` (learn from its fitness)
and lists its own state in ``_state``/``_load_state``. The base owns the seeded RNG,
the generation counter, best-so-far tracking, NaN-safe fitness and checkpoint state.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from neuroplug.algorithms.shaping import sanitize_fitness
from neuroplug.api import Algorithm, AlgorithmConfig, EvaluationResult
from neuroplug.noise import MAX_SEED
from neuroplug.population import Population


class EvolutionAlgorithm(Algorithm):
    """Ask/tell around a population, with reproducible randomness and checkpoints."""

    checkpoints_best_params: ClassVar[bool] = True
    """Whether checkpoints hold the best member's weights. Algorithms with compact genomes
    (the GA's seed chains) set it False and rebuild ``best_params`` in ``_load_state``."""

    def __init__(
        self,
        config: AlgorithmConfig,
        initial_params: torch.Tensor,
        seed: int,
        initializer: Callable[[int], torch.Tensor] | None = None,
    ) -> None:
        super().__init__(config, initial_params, seed, initializer)
        self.initializer = initializer
        self.num_params = int(initial_params.numel())
        self.rng = np.random.Generator(np.random.Philox(seed))
        self.generation = 0
        self.best_fitness = -np.inf
        self.best_params = initial_params.detach().clone().float()
        self.nonfinite_fitness = 0

    def continue_generation(self) -> None:
        """Called from ``_tell``: this generation needs another ask/evaluate/tell round."""
        self._generation_open = True

    def fresh_params(self, seed: int) -> torch.Tensor:
        """A new draw from the network's initialisation distribution for ``seed``."""
        if self.initializer is None:
            raise RuntimeError(
                f"{type(self).__name__} samples fresh networks but was built without an initializer"
            )
        return self.initializer(int(seed)).float()

    def draw_seeds(self, count: int) -> torch.Tensor:
        """``count`` fresh noise seeds from the algorithm's RNG."""
        return torch.from_numpy(
            self.rng.integers(0, MAX_SEED, size=count, endpoint=True).astype(np.int64)
        )

    def ask(self) -> Population:
        return self._ask()

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        fitness, replaced = sanitize_fitness(result.fitness)
        self.nonfinite_fitness += replaced
        leader = int(np.argmax(fitness))
        if fitness[leader] > self.best_fitness:
            self.best_fitness = float(fitness[leader])
            self.best_params = population.materialize(torch.tensor([leader]), device="cpu")[0]
        self._generation_open = False
        stats = self._tell(population, fitness, result)
        if not self._generation_open:
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

        ``result`` carries the rest of the evaluation (per-episode returns, behaviours).
        """

    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """This algorithm's own state (tensors and plain values)."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_state` returned."""
