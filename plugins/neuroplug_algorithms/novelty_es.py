"""``algo=ns_es`` / ``nsr_es`` / ``nsra_es``: evolution strategies that seek novelty.

Conti, Madhavan, Petroski Such, Lehman, Stanley & Clune (2018), "Improving Exploration in
Evolution Strategies for Deep Reinforcement Learning via a Population of Novelty-Seeking
Agents", NeurIPS 2018, arXiv:1712.06560 (Algorithms 1-3). As run here::

    theta^1..theta^M <- fresh networks from distinct seeds           # the meta-population
    A <- {b(theta^m)}                          # generation 0 opens with a round evaluating them
    every generation:
        pick m with probability N(b(theta^m), A) / sum_j N(b(theta^j), A)
        members theta^m +/- sigma*eps(s_k)  ->  returns R_i, behaviors b_i
        N_i = N(b_i, A)                        # mean distance to the k nearest in A
        u_i = w * centered_rank(R)_i + (1 - w) * centered_rank(N)_i
        theta^m <- theta^m - Adam_m(-1/P sum_i u_i eps_i + l2 * theta^m)   # OpenAI ES step
        evaluate theta^m (a round of its own) -> its return; A <- A + {b(theta^m)}

NS-ES (Algorithm 1) uses novelty alone, ``w = 0``; NSR-ES (Algorithm 2) averages the two
rank vectors, ``w = 1/2``; NSRA-ES (Algorithm 3) adapts ``w``: it starts at 1 (pure
reward); when the best center return so far improves, ``w`` rises by ``weight_delta``;
after ``stall_generations`` generations without improvement it falls by ``weight_delta``
and the count restarts; ``w`` stays in [0, 1]. All three pick the center to perturb in
proportion to its novelty, as the paper does.

Each center is an :class:`~neuroplug_algorithms.es.ESCenter` (the OpenAI-ES step
``algo=es`` uses too) with its own Adam state and noise RNG; only the weights of its
update come from here. A behavior characterisation
(``algo.behavior``, see :mod:`neuroplug.evaluation.behaviors`) averages over a member's episodes.
Two choices differ from the paper's code: a center's novelty for selection uses the
behavior measured when it was last evaluated, not fresh rollouts every generation; and
one observation normalizer is shared by all centers instead of one each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm, centered_ranks
from neuroplug.population.members import Population
from neuroplug.population.noise import MAX_SEED
from neuroplug.runtime.seeds import algorithm_rng
from neuroplug_algorithms.es import ESCenter
from neuroplug_algorithms.novelty import BehaviorArchive, novelty_proportional
from neuroplug_algorithms.novelty_es_config import NSESConfig, NSRAESConfig

_INITIAL, _PERTURBED, _UPDATED = "initial", "perturbed", "updated"
"""The rounds: all centers (generation 0 only), center m's population, the updated center m."""


def _snapshot(center: ESCenter) -> dict[str, Any]:
    """A center's state with its noise RNG, for checkpoints."""
    return {"rng": center.rng.bit_generator.state, **center.state_dict()}


def _restore(center: ESCenter, state: dict[str, Any]) -> None:
    """Continue a center from :func:`_snapshot`."""
    center.rng.bit_generator.state = state["rng"]
    center.load_state_dict(state)


def _mean_behavior(result: EvaluationResult, behavior: str) -> np.ndarray:
    """``(P, d)``: each member's behavior averaged over its episodes."""
    if result.behaviors is None:
        raise RuntimeError(f"the scheduler returned no behaviors for request.behavior={behavior!r}")
    return result.behaviors.reshape(*result.behaviors.shape[:2], -1).mean(axis=1)


class NSES(EvolutionAlgorithm):
    """NS-ES: a meta-population of ES centers that follow novelty alone."""

    config_class = NSESConfig
    reward_weight: float = 0.0
    """``w``, the share of the reward ranks in the update."""

    def __init__(self, config: NSESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        seeds = self.rng.choice(MAX_SEED + 1, size=config.meta_population_size, replace=False)
        # Each center: a fresh network and a noise RNG of its own, both from its seed.
        self.centers = [
            ESCenter(
                config,
                self.fresh_params(int(s)),
                algorithm_rng(int(s)),
                context.network,
            )
            for s in seeds
        ]
        self.archive = BehaviorArchive()
        self.center_behaviors: np.ndarray | None = None
        """``(M, d)``: each center's behavior when it was last evaluated."""
        self.center_returns = np.full(config.meta_population_size, -np.inf)
        """Each center's return when it was last evaluated."""
        self.best_center_return = -np.inf
        """The best return of any center evaluation so far."""
        self.round = _INITIAL
        self.active = 0
        """The center this generation perturbs."""

    def behavior(self) -> str:
        return self.config.behavior

    def episodes_per_member(self) -> int:
        if self.round == _PERTURBED:
            return self.config.episodes_per_member
        return self.config.center_episodes

    def policy_params(self) -> torch.Tensor:
        return self.centers[int(np.argmax(self.center_returns))].params.clone()

    # ------------------------------------------------------------------ the rounds

    def _ask(self) -> Population:
        if self.round == _INITIAL:
            return Population.dense(torch.stack([center.params for center in self.centers]))
        if self.round == _PERTURBED:
            novelty = self.archive.novelty(self.center_behaviors, self.config.k)
            self.active = int(self.rng.choice(len(self.centers), p=novelty_proportional(novelty)))
            return self.centers[self.active].ask()
        return Population.dense(self.centers[self.active].params.unsqueeze(0))

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        behaviors = _mean_behavior(result, self.config.behavior)
        if self.round == _INITIAL:
            self.center_behaviors, self.center_returns = behaviors, fitness.copy()
            self.best_center_return = float(fitness.max())
            self.archive.add(behaviors)
            self.round = _PERTURBED
            self.continue_generation()
            return {"archive_size": float(len(self.archive))}
        if self.round == _PERTURBED:
            novelty = self.archive.novelty(behaviors, self.config.k)
            w = self.reward_weight
            weights = w * centered_ranks(fitness) + (1.0 - w) * centered_ranks(novelty)
            stats = self.centers[self.active].step(population, weights)
            self.round = _UPDATED
            self.continue_generation()
            return {
                **stats,
                "center": float(self.active),
                "reward_weight": float(self.reward_weight),
                "novelty_mean": float(novelty.mean()),
                "novelty_max": float(novelty.max()),
            }
        center_return = float(fitness[0])
        self.center_behaviors[self.active] = behaviors[0]
        self.center_returns[self.active] = center_return
        self.archive.add(behaviors[0])
        improved = center_return > self.best_center_return
        self.best_center_return = max(self.best_center_return, center_return)
        self._adapt_reward_weight(improved)
        self.round = _PERTURBED
        return {
            "center_return": center_return,
            "best_center_return": self.best_center_return,
            "archive_size": float(len(self.archive)),
        }

    def _adapt_reward_weight(self, improved: bool) -> None:
        """After each updated center's evaluation: NSRA-ES adapts ``w`` here."""

    # ------------------------------------------------------------------ checkpoints

    def _state(self) -> dict[str, Any]:
        return {
            "centers": [_snapshot(center) for center in self.centers],
            "archive": self.archive.state_dict(),
            "center_behaviors": (
                None if self.center_behaviors is None else self.center_behaviors.copy()
            ),
            "center_returns": self.center_returns.copy(),
            "best_center_return": self.best_center_return,
            "round": self.round,
            "active": self.active,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        if len(state["centers"]) != len(self.centers):
            raise ValueError(
                f"the checkpoint has {len(state['centers'])} centers, "
                f"algo.meta_population_size is {len(self.centers)}"
            )
        for center, saved in zip(self.centers, state["centers"], strict=True):
            _restore(center, saved)
        self.archive.load_state_dict(state["archive"])
        stored = state["center_behaviors"]
        self.center_behaviors = None if stored is None else np.array(stored)
        self.center_returns = np.array(state["center_returns"], dtype=np.float64)
        self.best_center_return = float(state["best_center_return"])
        self.round = state["round"]
        self.active = int(state["active"])


class NSRES(NSES):
    """NSR-ES: NS-ES whose update averages reward and novelty ranks."""

    reward_weight = 0.5


class NSRAES(NSES):
    """NSRA-ES: NS-ES whose reward weight adapts to stalls and improvements."""

    config_class = NSRAESConfig

    def __init__(self, config: NSRAESConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.reward_weight = config.initial_reward_weight
        self.stalled_generations = 0
        """Updated centers evaluated since the best center return last improved."""

    def _adapt_reward_weight(self, improved: bool) -> None:
        # Exploit (more reward) while it pays; explore (more novelty) once it stops paying.
        delta = self.config.weight_delta
        if improved:
            self.stalled_generations = 0
            self.reward_weight = min(1.0, self.reward_weight + delta)
            return
        self.stalled_generations += 1
        if self.stalled_generations >= self.config.stall_generations:
            self.stalled_generations = 0
            self.reward_weight = max(0.0, self.reward_weight - delta)

    def _state(self) -> dict[str, Any]:
        return {
            **super()._state(),
            "reward_weight": self.reward_weight,
            "stalled_generations": self.stalled_generations,
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        super()._load_state(state)
        self.reward_weight = float(state["reward_weight"])
        self.stalled_generations = int(state["stalled_generations"])
