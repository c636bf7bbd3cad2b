"""``algo=ga``: the deep genetic algorithm.

Such, Madhavan, Conti, Lehman, Stanley & Clune (2017), "Deep Neuroevolution: Genetic
Algorithms Are a Competitive Alternative for Training Deep Neural Networks for
Reinforcement Learning", arXiv:1712.06567 (Algorithm 1). Per generation, N members::

    if first generation:  P_i = init(s_i)                           i = 1..N
    else:                 P_1 = elite                               # unmodified
                          P_i = parent_k + sigma * eps(s_i),  k ~ U{1..T}    i = 2..N
    evaluate every member (episodes_per_member) -> F;  sort P by F, best first
    candidates C = top elite_candidates of P, plus the previous elite
    elite = argmax_{c in C} mean return of c over elite_episodes    # a second round
    parents = [elite, P - {elite}]_{1..T}                           # for the next generation

Compact encoding: a genome is its chain of seeds ``[s_0, s_1, ..., s_m]``, the init seed
then one mutation seed per generation in which an ancestor was mutated, and its weights
are ``init(s_0) + sigma * eps(s_1) + ... + sigma * eps(s_m)``. The checkpoint holds the
parents' chains (the elite's first) and the best member's chain, never weights; the
parents' weights are cached in memory and replayed from the chains after a resume, with
the very operations that built them, so a resumed run continues bit-identically.

Choices: ``population_size`` is N and counts the elite (the elite plus N - 1 children, as
in Algorithm 1); the parents include the elite (the paper's ``[Elite, P - {Elite}]``, and
its code); the candidates are the top ``elite_candidates`` plus the previous elite, so
one more than the paper's "top 9 plus the elite" when the elite is not among the top.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.population.members import BaseOrigin, Population
from neuroplug_algorithms import seed_chains
from neuroplug_algorithms.ga_config import GAConfig
from neuroplug_algorithms.seed_chains import Chain


@dataclass
class _OpenGeneration:
    """What the elite round needs from the main round (never checkpointed: checkpoints
    fall between generations)."""

    population: Population
    chains: list[Chain]
    ranking: np.ndarray
    """Member indices, best main-round fitness first."""
    candidates: np.ndarray
    """Member indices re-evaluated in the elite round, the previous elite first."""


class DeepGA(EvolutionAlgorithm):
    """Truncation selection, Gaussian mutation, an elite chosen on extra episodes."""

    config_class = GAConfig
    checkpoints_best_params = False  # the best member is kept as seeds and rebuilt on load

    def __init__(self, config: GAConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        self.parent_chains: list[Chain] = []
        """Genomes of the next generation's parents, the elite first; none before one."""
        self.parents = torch.empty(0, self.num_params)
        """Their weights: a cache rebuilt from the chains on load."""
        self.parents_origin: BaseOrigin | None = None
        """The parents as members of the population they were selected from (lets a
        distributed scheduler send indices instead of weights); None after a resume."""
        self.best_chain: Chain = []
        """Genome of the base class's best-so-far member (its weights are not checkpointed)."""
        self._best_chain_fitness = -np.inf
        self._chains: list[Chain] = []
        self._open: _OpenGeneration | None = None

    def episodes_per_member(self) -> int:
        if self._open is not None:
            return self.config.elite_episodes
        return self.config.episodes_per_member

    def _ask(self) -> Population:
        if self._open is not None:
            return self._open.population.subset(self._open.candidates)
        size = self.config.population_size
        if not self.parent_chains:
            seeds = self.draw_seeds(size)
            self._chains = [[seed] for seed in seeds.tolist()]
            return self.context.fresh_population(seeds)
        parent = torch.from_numpy(self.rng.integers(0, len(self.parent_chains), size=size - 1))
        seeds = self.draw_seeds(size - 1)
        self._chains = [self.parent_chains[0]] + [
            self.parent_chains[k] + [s]
            for k, s in zip(parent.tolist(), seeds.tolist(), strict=True)
        ]
        # Member 0 is the elite (parent 0) unmodified: scale 0, its seed unused.
        zero = torch.zeros(1, dtype=torch.int64)
        return Population(
            bases=self.parents,
            base_index=torch.cat([zero, parent]),
            scale=torch.cat([torch.zeros(1), torch.full((size - 1,), self.config.sigma)]),
            seed=torch.cat([zero, seeds]),
            origin=self.parents_origin,
        )

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        if self._open is None:
            return self._select_candidates(population, fitness)
        return self._select_elite(fitness)

    def _select_candidates(self, population: Population, fitness: np.ndarray) -> dict[str, float]:
        """Main round: rank the members and open the elite round."""
        self._note_best(fitness, self._chains)
        # A stable sort keeps ties in member order, so the elite (member 0) wins them.
        ranking = np.argsort(-fitness, kind="stable")
        top = ranking[: self.config.num_candidates]
        candidates = np.r_[0, top[top != 0]] if self.parent_chains else top
        self._open = _OpenGeneration(population, self._chains, ranking, candidates)
        self.continue_generation()
        return {
            "truncated_return_mean": float(fitness[ranking[: self.config.num_parents]].mean()),
        }

    def _select_elite(self, fitness: np.ndarray) -> dict[str, float]:
        """Elite round: the best mean over ``elite_episodes`` is the elite; take the parents."""
        open_generation, self._open = self._open, None
        candidates = open_generation.candidates
        self._note_best(fitness, [open_generation.chains[m] for m in candidates])
        elite = int(candidates[np.argmax(fitness)])  # ties keep the previous elite
        ranking = open_generation.ranking
        members = np.r_[elite, ranking[ranking != elite][: self.config.num_parents - 1]]
        self.parents = open_generation.population.materialize(
            torch.from_numpy(members), device="cpu"
        )
        self.parents_origin = BaseOrigin(
            replace(open_generation.population, origin=None), torch.from_numpy(members)
        )
        self.parent_chains = [open_generation.chains[m] for m in members]
        return {
            "elite_return_mean": float(fitness.max()),
            "elite_genome_length": float(len(self.parent_chains[0])),
        }

    def _note_best(self, fitness: np.ndarray, chains: list[Chain]) -> None:
        """Keep the genome of the member the base class just took as its best so far."""
        if self.best_fitness > self._best_chain_fitness:
            self.best_chain = chains[int(np.argmax(fitness))]
            self._best_chain_fitness = self.best_fitness

    def build(self, chains: list[Chain]) -> torch.Tensor:
        """The ``(n, D)`` weights of genomes, replayed seed by seed as the generations built
        them (so bit-identical), each prefix that several genomes share once."""
        return seed_chains.build(
            chains, self.num_params, self.fresh_params, lambda depth: self.config.sigma
        )

    def policy_params(self) -> torch.Tensor:
        return (self.parents[0] if self.parent_chains else self.best_params).clone()

    def _state(self) -> dict[str, Any]:
        return {
            "parent_chains": [list(chain) for chain in self.parent_chains],
            "best_chain": list(self.best_chain),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.parent_chains = [[int(seed) for seed in chain] for chain in state["parent_chains"]]
        self.best_chain = [int(seed) for seed in state["best_chain"]]
        self._best_chain_fitness = self.best_fitness
        self._open = None
        # One replay for both: the best member usually shares most of its chain with a parent.
        weights = self.build(self.parent_chains + ([self.best_chain] if self.best_chain else []))
        self.parents = weights[: len(self.parent_chains)]
        self.parents_origin = None
        if self.best_chain:
            self.best_params = weights[-1].clone()
