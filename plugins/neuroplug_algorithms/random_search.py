"""``algo=rs``: random search, the baseline of the deep GA paper.

Such et al. (2017), "Deep Neuroevolution: Genetic Algorithms Are a Competitive
Alternative for Training Deep Neural Networks for Reinforcement Learning",
arXiv:1712.06567: random search is the GA without selection. Per generation::

    draw seeds s_1..s_N from the algorithm's RNG;  P_i = init(s_i)   # every member fresh
    evaluate every member (episodes_per_member) -> F
    best <- argmax_i F_i  if F_i beats every member so far            # the base class's
    deploy best

The best member is rebuilt from its init seed, so the checkpointed state is that seed
(and its fitness, the base class's ``best_fitness``), whatever the network's size.
Fitness is the mean over ``episodes_per_member`` episodes; raise it on noisy tasks, where
a single lucky episode can otherwise become the deployed policy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.population.members import Population
from neuroplug_algorithms.random_search_config import RandomSearchConfig


class RandomSearch(EvolutionAlgorithm):
    """Sample fresh networks from the init distribution; deploy the best one ever seen."""

    config_class = RandomSearchConfig
    checkpoints_best_params = False  # the best member is kept as seeds and rebuilt on load

    def __init__(self, config: RandomSearchConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.best_seed: int | None = None
        """Init seed of the best member so far (None before the first generation)."""
        self._best_seed_fitness = -np.inf
        self._seeds = torch.empty(0, dtype=torch.int64)

    def _ask(self) -> Population:
        self._seeds = self.draw_seeds(self.config.population_size)
        return self.context.fresh_population(self._seeds)

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        improved = self.best_fitness > self._best_seed_fitness
        if improved:  # the base class just took this generation's leader as its best
            self.best_seed = int(self._seeds[int(np.argmax(fitness))])
            self._best_seed_fitness = self.best_fitness
        return {"new_best": float(improved)}

    def policy_params(self) -> torch.Tensor:
        return self.best_params.clone()

    def _state(self) -> dict[str, Any]:
        return {"best_seed": self.best_seed}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.best_seed = state["best_seed"]
        self._best_seed_fitness = self.best_fitness
        if self.best_seed is not None:
            self.best_params = self.fresh_params(self.best_seed)
