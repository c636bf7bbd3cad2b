"""``algo=es``: OpenAI evolution strategies.

Salimans, Ho, Chen, Sidor & Sutskever (2017), "Evolution Strategies as a Scalable
Alternative to Reinforcement Learning", arXiv:1703.03864. Per generation::

    draw seeds s_1..s_{P/2};  members theta + sigma*eps(s_k) and theta - sigma*eps(s_k)
    evaluate every member -> returns F
    u = centred_ranks(F)                       # fitness shaping over the whole population
    g = 1/P * sum_k (u_k+ - u_k-) * eps(s_k)   # mirrored estimate; eps regenerated from s_k
    theta <- theta - Adam(-g + l2 * theta)

The step itself (sampling, the mirrored estimate, Adam) is
:class:`neuroplug.algorithms.es_step.ESCentre`, which the novelty-search family shares.
Observation normalisation and action noise are handled by the policy and scheduler
when ``obs_norm`` / ``action_noise`` are set. ``perturbation=lowrank`` perturbs the large
weight matrices by rank-``rank`` products instead (EGGROLL, Sarkar et al. 2025; see
:mod:`neuroplug.lowrank`); the update then sums those same perturbations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from neuroplug.algorithms import EvolutionAlgorithm, centered_ranks
from neuroplug.algorithms.es_step import ESCentre, ESStepConfig
from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.population import Population


@dataclass
class ESConfig(ESStepConfig):
    """OpenAI ES settings (the paper's MuJoCo defaults; every field is the ES step's)."""


class OpenAIES(EvolutionAlgorithm):
    """OpenAI ES with mirrored sampling, centred ranks, Adam and L2 decay."""

    config_class = ESConfig

    def __init__(self, config: ESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.search = ESCentre(config, context.initial_params, self.rng, context.network)

    @property
    def centre(self) -> torch.Tensor:
        """The centre of the search distribution (the deployed policy)."""
        return self.search.params

    def _ask(self) -> Population:
        return self.search.ask()

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        return self.search.step(population, self._shape(fitness))

    def _shape(self, fitness: np.ndarray) -> np.ndarray:
        if self.config.fitness_shaping == "centered_ranks":
            return centered_ranks(fitness)
        return (fitness - fitness.mean()) / (fitness.std() + 1e-8)

    def policy_params(self) -> torch.Tensor:
        return self.centre.clone()

    def _state(self) -> dict[str, Any]:
        return self.search.state_dict()

    def _load_state(self, state: dict[str, Any]) -> None:
        self.search.load_state_dict(state)
