"""The settings of ``algo=erl`` (:mod:`neuroplug_learners.hybrids.erl`), in a module that imports
no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug_learners.hybrids.cooperation_config import CooperationConfig


@dataclass
class ERLConfig(CooperationConfig):
    """ERL (Khadka & Tumer 2018) with a TD3 learner (as their CERL follow-up): a GA
    population beside the learner, whose episodes fill the population's replay buffer too;
    continuous actions only. The GA's
    defaults are the paper's (population 10, elite fraction 0.1, tournaments of 3,
    mutation probability 0.9 of 10% of the weights at strength 0.1, super-mutation and
    reset 5% each, the learner copied in every 10 generations)."""

    population_size: int = 10
    """Actors in the GA's population (the learner's actor is apart)."""
    init_sigma: float = 0.1
    """Std of the Gaussian added to every parameter of the first population's fresh
    networks so that they act differently (neuroplug's fresh networks all stand still, and
    critics trained on that one behaviour diverged: HalfCheetah's Q estimates reached
    millions). 0 starts from the plain fresh draws."""
    elite_fraction: float = 0.1
    """Share of the population kept unchanged as elites (at least one)."""
    tournament_size: int = 3
    """Members per selection tournament (with replacement)."""
    crossover_prob: float = 0.5
    """Chance an offspring is crossed with a random elite (unit-wise exchange of weights)."""
    mutation_prob: float = 0.9
    """Chance an offspring is mutated."""
    mutation_fraction: float = 0.1
    """Share of each weight tensor's entries a mutation touches."""
    mutation_strength: float = 0.1
    """A touched weight w moves by N(0, (strength w)^2)."""
    super_mutation_prob: float = 0.05
    """Chance a touched weight takes a super mutation instead: strength x 100 (the paper's)."""
    reset_prob: float = 0.05
    """Chance a touched weight is reset to N(0, 1) instead."""
    weight_limit: float = 1_000_000.0
    """Weights are clipped to +- this after a mutation."""
    sync_period: int = 10
    """Every this many generations the learner's actor replaces the weakest member."""
    learner_episodes: int = 1
    """Episodes the learner's actor plays each generation (with exploration noise) into the
    buffer."""
    exploration_noise: float = 0.1
    """Std of the Gaussian added to the learner's actions while it explores (env units)."""
    critic_steps_per_env_step: float = 1.0
    """The critics' gradient steps per env step the generation played (all rounds)."""
    policy_frequency: int = 2
    """Critic steps per actor step (TD3's delay)."""

    minimum_population = 3

    def check(self) -> None:
        super().check()
        require(
            self.population_size >= self.minimum_population,
            "algo.population_size",
            f"ERL's GA needs an elite, a tournament and an offspring; got {self.population_size}",
            f"an integer >= {self.minimum_population}",
        )
        require(
            0 < self.elite_fraction < 1,
            "algo.elite_fraction",
            f"got {self.elite_fraction}",
            "a float in (0, 1)",
        )
        require(self.init_sigma >= 0, "algo.init_sigma", f"got {self.init_sigma}", "a float >= 0")
        require(
            1 <= self.tournament_size <= self.population_size,
            "algo.tournament_size",
            f"got {self.tournament_size} with algo.population_size={self.population_size}",
            f"an integer in [1, {self.population_size}]",
        )
        for name in ("crossover_prob", "mutation_prob", "mutation_fraction"):
            value = getattr(self, name)
            require(0 <= value <= 1, f"algo.{name}", f"got {value}", "a float in [0, 1]")
        require(
            0 <= self.super_mutation_prob
            and 0 <= self.reset_prob
            and self.super_mutation_prob + self.reset_prob <= 1,
            "algo.super_mutation_prob",
            f"got {self.super_mutation_prob} with algo.reset_prob={self.reset_prob}",
            "two non-negative probabilities summing to at most 1",
        )
        for name in ("mutation_strength", "weight_limit", "exploration_noise"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
        for name in ("sync_period", "learner_episodes", "policy_frequency"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.critic_steps_per_env_step >= 0,
            "algo.critic_steps_per_env_step",
            f"got {self.critic_steps_per_env_step}",
            "a float >= 0",
        )

    @property
    def elites(self) -> int:
        """Members kept unchanged each generation."""
        return max(1, int(self.elite_fraction * self.population_size))
