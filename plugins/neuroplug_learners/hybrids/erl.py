"""``algo=erl``: evolutionary reinforcement learning, a GA population beside a TD3 learner.

Khadka & Tumer (2018), "Evolution-Guided Policy Gradient in Reinforcement Learning",
NeurIPS, Algorithm 1, with TD3 as the learner (their CERL follow-up's choice)::

    population of k actors (fresh draws + N(0, init_sigma^2)), the learner's actor pi_rl and critics, buffer R
    every generation:
        round 0: every actor plays its episode(s), no noise; transitions -> R
            rank by fitness; the best e are elites (kept unchanged)
            k - e offspring: tournament selection (size 3, with replacement) of copies,
                each crossed with a random elite (probability crossover_prob), then mutated
                (probability mutation_prob): 10% of each tensor's weights w += N(0, (0.1 w)^2),
                5% of those a super mutation (x 100), 5% reset to N(0, 1)
        round 1: pi_rl plays learner_episodes episode(s) with Gaussian exploration noise -> R
            TD3 (Fujimoto et al. 2018): as many critic steps as the generation's env steps,
            an actor step every policy_frequency of them
            every sync_period generations: pi_rl's weights replace the weakest member's

The run deploys the champion: the best member of the last evaluated population, or the
learner's actor where its exploring episode returned more (a departure: the paper reports
the population's champion, which the learner joins only every ``sync_period``
generations; on HalfCheetah the learner returned 3,429 at 110k frames while no member had
yet passed -160).

On the population engine: the population acts in one batched forward (alive members only)
on the scheduler's envs, which return the steps played (``EvaluationRequest.transitions``);
the learner's episode is a second evaluation round of one member, so both rounds' episodes
are seeded by the run seed, the generation and the round. The learner's gradient steps run
on :class:`~neuroplug_learners.td3.TD3Update` (a stack of one actor).

Departures: TD3 rather than DDPG; the first actors are fresh draws moved by
``N(0, init_sigma^2)`` (their fan-in initialisation acts diversely; neuroplug's small last
layer makes every fresh draw stand still, and critics fed only that diverged); crossover exchanges the units of each parameter tensor
(rows along its first axis) between an offspring and an elite, as their code does per
layer; "the weakest member" replaced at a sync is an offspring's slot of the next
population (their code overwrites the slot the weakest held, which a new offspring
occupies by then); the
actor is the run's ``net`` (the paper: 128-128 tanh with layer norm) and the critics
400-300 ReLU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import Algorithm, AlgorithmContext, EvaluationResult
from neuroplug.evolution.initial import perturbed_fresh_members
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import algorithm_rng
from neuroplug_learners.hybrids.cem_rl import require_continuous_task
from neuroplug_learners.hybrids.erl_config import ERLConfig
from neuroplug_learners.td3 import StackedActors, TD3Update, evaluated_replay, store_evaluated

POPULATION_ROUND, LEARNER_ROUND = 0, 1


class ERL(Algorithm):
    """A GA over actors and a TD3 learner sharing one replay buffer; the learner's actor
    joins the population every ``sync_period`` generations."""

    config_class = ERLConfig
    requires_env = True
    max_rounds_per_generation = 2

    def __init__(self, config: ERLConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        require_continuous_task("erl", context)
        self.rng = algorithm_rng(context.seed)
        seeds = self.rng.integers(0, 2**31, size=config.population_size)
        self.population = perturbed_fresh_members(context, seeds, config.init_sigma, self.rng)
        self.replay = evaluated_replay(config, context)
        self.notices: list[str] = []
        self.td3 = TD3Update.for_algorithm(config, context)
        self.learner = StackedActors(
            context.initial_params.unsqueeze(0), config.actor_learning_rate
        )
        self.round = POPULATION_ROUND
        self.champion = self.population[0].clone()
        self.champion_fitness = -np.inf
        self.generation_env_steps = 0
        self._weakest_offspring = config.population_size - 1
        self._stats: dict[str, float] = {}

    # ---------------------------------------------------------------- the engine's view

    def wants_transitions(self) -> bool:
        return True

    def episodes_per_member(self) -> int:
        if self.round == LEARNER_ROUND:
            return self.config.learner_episodes
        return self.config.episodes_per_member

    def action_noise(self) -> float:
        return self.config.exploration_noise if self.round == LEARNER_ROUND else 0.0

    def ask(self) -> Population:
        if self.round == LEARNER_ROUND:
            return Population.dense(self.learner.params.detach().clone())
        return Population.dense(self.population.clone())

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        if result.transitions is not None:
            store_evaluated(self.replay, result.transitions, self.context.env)
        self.generation_env_steps += int(result.env_steps)
        if self.round == POPULATION_ROUND:
            self._evolve(np.nan_to_num(result.fitness, nan=-np.inf))
            self.round = LEARNER_ROUND
            self.continue_generation()
            return {}
        learner_return = float(np.nan_to_num(result.fitness[0], nan=-np.inf))
        stats = dict(self._stats, learner_return=learner_return)
        if learner_return > self._stats.get("best_fitness", -np.inf):
            # The learner's exploring episode beat every member: it is deployed, rather
            # than waiting up to sync_period generations to enter the population.
            self.champion = self.learner.params.detach()[0].clone()
            stats["learner_deployed"] = 1.0
        if learner_return > self.champion_fitness:
            self.champion_fitness = learner_return
            self.best_params = self.champion.clone()
        if self.replay.learning:
            stats.update(self._learn())
        self.generation += 1
        if self.generation % self.config.sync_period == 0:
            # Migration: the learner's actor takes the weakest slot of the next population.
            self.population[self._weakest_offspring] = self.learner.params.detach()[0]
            stats["synced"] = 1.0
        stats["buffer"] = float(len(self.replay))
        self.round = POPULATION_ROUND
        self.generation_env_steps = 0
        return stats

    def policy_params(self) -> torch.Tensor:
        return self.champion.clone()

    # ---------------------------------------------------------------- the GA

    def _evolve(self, fitness: np.ndarray) -> None:
        """The next population: elites, then tournament-selected, crossed, mutated copies."""
        config, size = self.config, self.config.population_size
        order = np.argsort(-fitness, kind="stable")
        best = int(order[0])
        self.champion = self.population[best].clone()
        if fitness[best] > self.champion_fitness:
            self.champion_fitness = float(fitness[best])
            self.best_params = self.champion.clone()
        elites = order[: config.elites]
        offspring = []
        for _ in range(size - config.elites):
            entrants = self.rng.integers(0, size, size=config.tournament_size)
            winner = int(entrants[np.argmax(fitness[entrants])])
            child = self.population[winner].clone()
            if self.rng.random() < config.crossover_prob:
                child = self._crossover(child, self.population[int(self.rng.choice(elites))])
            if self.rng.random() < config.mutation_prob:
                child = self._mutate(child)
            offspring.append(child)
        self.population = torch.stack([*self.population[elites], *offspring])
        self._weakest_offspring = size - 1
        self._stats = {
            "best_fitness": float(fitness[best]),
            "mean_fitness": float(np.mean(fitness[np.isfinite(fitness)]))
            if np.isfinite(fitness).any()
            else float("nan"),
        }

    def _crossover(self, child: torch.Tensor, elite: torch.Tensor) -> torch.Tensor:
        """Per parameter tensor, a random number of its units (rows along the first axis)
        taken from ``elite`` (their code's per-layer exchange, one direction)."""
        layout = self.context.network.layout
        child = child.clone()
        for slot in layout.slots.values():
            rows = slot.shape[0] if slot.shape else 1
            swaps = int(self.rng.integers(0, 2 * rows + 1))
            if not swaps:
                continue
            chosen = np.unique(self.rng.integers(0, rows, size=swaps))
            view = child[slot.offset : slot.offset + slot.size].view(rows, -1)
            source = elite[slot.offset : slot.offset + slot.size].view(rows, -1)
            view[torch.from_numpy(chosen)] = source[torch.from_numpy(chosen)]
        return child

    def _mutate(self, child: torch.Tensor) -> torch.Tensor:
        """ERL's mutation, tensor by tensor: ``mutation_fraction`` of the entries, most
        nudged by N(0, (strength w)^2), some super-mutated (x 100) or reset to N(0, 1)."""
        config, layout = self.config, self.context.network.layout
        child = child.clone()
        for slot in layout.slots.values():
            touched = int(np.ceil(config.mutation_fraction * slot.size))
            where = slot.offset + self.rng.integers(0, slot.size, size=touched)
            weights = child[torch.from_numpy(where)].double().numpy()
            kind = self.rng.random(touched)
            normals = self.rng.standard_normal(touched)
            super_mutated = kind < config.super_mutation_prob
            reset = (kind >= config.super_mutation_prob) & (
                kind < config.super_mutation_prob + config.reset_prob
            )
            strength = np.where(
                super_mutated, 100 * config.mutation_strength, config.mutation_strength
            )
            mutated = np.where(reset, normals, weights + normals * strength * weights)
            mutated = np.clip(mutated, -config.weight_limit, config.weight_limit)
            child[torch.from_numpy(where)] = torch.from_numpy(mutated).float()
        return child

    # ---------------------------------------------------------------- the learner

    def _learn(self) -> dict[str, float]:
        """TD3 steps for the generation's experience: critic steps per env step, an actor
        step every ``policy_frequency`` of them."""
        config = self.config
        critic_steps = round(config.critic_steps_per_env_step * self.generation_env_steps)
        self.replay.restart_sampling(self.generation)
        stats = self.td3.train(
            self.learner,
            self.replay,
            actor_steps=critic_steps // config.policy_frequency,
            critic_steps=critic_steps,
        )
        return {f"learner_{key}": value for key, value in stats.items()}

    # ---------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "generation": self.generation,
            "population": self.population.clone(),
            "rng": self.rng.bit_generator.state,
            "td3": self.td3.state_dict(),
            "learner": self.learner.state_dict(),
            "champion": self.champion.clone(),
            "champion_fitness": self.champion_fitness,
            "best_params": self.best_params,
        }
        return state | self.replay.state_dict(self.config.checkpoint_replay)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self.population = state["population"].clone()
        self.rng.bit_generator.state = state["rng"]
        self.td3.load_state_dict(state["td3"])
        self.learner.load_state_dict(state["learner"])
        self.champion = state["champion"].clone()
        self.champion_fitness = float(state["champion_fitness"])
        self.best_params = state["best_params"]
        self.round = POPULATION_ROUND
        self.replay.load_state_dict(state, self.notices)
