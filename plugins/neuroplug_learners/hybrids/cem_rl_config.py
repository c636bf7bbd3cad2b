"""The settings of ``algo=cem_rl`` (:mod:`neuroplug_learners.hybrids.cem_rl`), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.errors import require
from neuroplug_learners.hybrids.cooperation_config import CooperationConfig


@dataclass
class CEMRLConfig(CooperationConfig):
    """CEM-RL (Pourchot & Sigaud 2019), the TD3 variant: a diagonal cross-entropy method
    over actors, half of which take TD3 gradient steps from the population's shared replay
    buffer before each evaluation; continuous actions only. Defaults are the paper's
    (population 10, half of it learning, initial variance 1e-3, noise 1e-3 decaying to
    1e-5, minibatches of 100, learning rates 1e-3, 10k transitions before learning)."""

    population_size: int = 10
    """Actors drawn per generation."""
    learners: int = 0
    """Actors that take TD3 gradient steps before the evaluation (the first ones drawn);
    0: half the population (the paper's)."""
    parents: int = 0
    """The best actors the mean and variance are fitted to; 0: half the population."""
    sigma_init: float = 1e-3
    """The initial variance of every parameter (the paper's sigma_init, a variance)."""
    damp: float = 1e-3
    """Noise added to the fitted variance (the paper's epsilon), against early collapse."""
    damp_limit: float = 1e-5
    """What ``damp`` decays to."""
    damp_tau: float = 0.95
    """Per generation, ``damp <- damp_tau damp + (1 - damp_tau) damp_limit``."""
    elitism: bool = False
    """Keep the best actor so far as the last member of every population."""
    actor_steps_per_env_step: float = 1.0
    """Each learning actor's gradient steps per env step the previous generation played (the
    paper's: as many)."""
    critic_steps_per_env_step: float = 1.0
    """The critics' gradient steps per env step the previous generation played, spread over
    the learners' training (the paper's 2 steps / pop per learner: as many in all)."""

    def check(self) -> None:
        super().check()
        size = self.population_size
        require(
            0 <= self.learners <= size,
            "algo.learners",
            f"got {self.learners} with algo.population_size={size}",
            f"0 (half the population) up to {size}",
        )
        require(
            0 <= self.parents <= size,
            "algo.parents",
            f"got {self.parents} with algo.population_size={size}",
            f"0 (half the population) up to {size}",
        )
        for name in ("sigma_init", "damp_limit"):
            value = getattr(self, name)
            require(value > 0, f"algo.{name}", f"got {value}", "a float > 0")
        require(self.damp >= 0, "algo.damp", f"got {self.damp}", "a float >= 0")
        require(
            0 <= self.damp_tau <= 1, "algo.damp_tau", f"got {self.damp_tau}", "a float in [0, 1]"
        )
        for name in ("actor_steps_per_env_step", "critic_steps_per_env_step"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")

    @property
    def learning_actors(self) -> int:
        """The actors that learn by gradient each generation."""
        return self.learners or self.population_size // 2

    @property
    def parent_count(self) -> int:
        """The actors the distribution is fitted to."""
        return self.parents or self.population_size // 2
