"""The settings of ``algo=pga_me`` (:mod:`neuroplug_learners.hybrids.pga_me`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuroplug.errors import require
from neuroplug.evolution.archive_config import ArchiveConfig
from neuroplug_learners.hybrids.cooperation_config import CooperationConfig


@dataclass
class PGAMEConfig(ArchiveConfig, CooperationConfig):
    """PGA-ME (Nilsson & Cully 2021); defaults are QDax's PGA-ME settings (a batch of 100
    offspring, half by Iso+LineDD and half by 100 policy-gradient steps on a TD3 critic
    trained 300 steps a generation, 256-256 critics, minibatches of 256); the population's
    steps train the critic. Continuous actions only."""

    population_size: int = 100
    """Offspring evaluated per generation (the first generation: fresh draws)."""
    ga_proportion: float = 0.5
    """Share of the offspring made by Iso+LineDD; the rest by policy-gradient steps."""
    iso_sigma: float = 0.005
    """Iso+LineDD's sigma_iso."""
    line_sigma: float = 0.05
    """Iso+LineDD's sigma_line."""
    pg_steps: int = 100
    """Policy-gradient steps each PG offspring takes from its parent (all in one stack)."""
    policy_learning_rate: float = 1e-3
    """Adam step size of the PG offspring's steps."""
    critic_steps: int = 300
    """Critic steps per generation (the greedy actor's every ``policy_frequency``-th)."""
    policy_frequency: int = 2
    """Critic steps per greedy-actor step (TD3's delay)."""
    inject_greedy: bool = True
    """Add the greedy actor (the critics' own policy) to every batch of offspring."""
    batch_size: int = 256
    learning_starts: int = 0
    critic_learning_rate: float = 3e-4
    actor_learning_rate: float = 3e-4
    """Adam step size of the greedy actor."""
    critic_hidden: list[int] = field(default_factory=lambda: [256, 256])

    def check(self) -> None:
        super().check()
        require(
            0 <= self.ga_proportion <= 1,
            "algo.ga_proportion",
            f"got {self.ga_proportion}",
            "a float in [0, 1]",
        )
        for name in ("iso_sigma", "line_sigma", "policy_learning_rate"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
        for name in ("pg_steps", "critic_steps"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "an integer >= 0")
        require(
            self.policy_frequency >= 1,
            "algo.policy_frequency",
            f"got {self.policy_frequency}",
            "an integer >= 1",
        )
        require(
            self.population_size >= 2 + int(self.inject_greedy),
            "algo.population_size",
            f"got {self.population_size}: PGA-ME needs GA and PG offspring"
            + (" and the greedy actor" if self.inject_greedy else ""),
            f"an integer >= {2 + int(self.inject_greedy)}",
        )
