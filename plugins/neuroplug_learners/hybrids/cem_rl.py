"""``algo=cem_rl``: the cross-entropy method and TD3 on one population of actors.

Pourchot & Sigaud (2019), "CEM-RL: Combining evolutionary and gradient-based methods for
policy search", ICLR, Algorithm 1 (the TD3 variant)::

    mu <- the network's initial parameters;  Sigma <- sigma_init I;  critics Q1, Q2, targets
    every generation:
        draw pop_size actors pi_i ~ N(mu, Sigma)                     (diagonal Sigma)
        if the buffer holds learning_starts transitions:
            for the first pop_size / 2 actors (the learners):
                train the critics for (steps of the last generation) / learners minibatches
                with pi_i as the target policy, then pi_i for as many steps as the last
                generation took env steps: maximise Q1(s, pi_i(s))
        evaluate every actor (one episode each); their transitions go into the buffer
        the best half z_1 .. z_K, weights lambda_i = log((K + 1) / i), normalised:
            mu_new    = sum_i lambda_i z_i
            Sigma_new = sum_i lambda_i (z_i - mu_old)^2 + epsilon        (element-wise)
            epsilon  <- damp_tau epsilon + (1 - damp_tau) damp_limit

The trained actors replace their draws in the population, so the distribution moves
towards what gradient steps found when they were good. The run deploys ``mu``.

On the population engine: every actor of a generation acts in one batched forward (alive
members only) on the scheduler's envs, which return the steps played
(``EvaluationRequest.transitions``); the learners train side by side as one stacked
computation (:class:`~neuroplug_learners.td3.TD3Update`): each of their gradient
steps is one batched forward and backward of all of them, and the critics' steps are spread
between them with each learner in turn as the target policy.

Departures: the learners train at once rather than one after another (the critics see the
learners' target policies in turn instead of one learner's for a block of steps); the
actor is the run's ``net`` (256-256 tanh for MuJoCo; the paper: 400-300 with layer norm)
and the critics 400-300 ReLU without layer norm; no antithetic draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import Algorithm, AlgorithmContext, EvaluationResult
from neuroplug.errors import ConfigError
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import algorithm_rng
from neuroplug_learners.hybrids.cem_rl_config import CEMRLConfig
from neuroplug_learners.td3 import StackedActors, TD3Update, evaluated_replay, store_evaluated


def require_continuous_task(name: str, context: AlgorithmContext) -> None:
    """Refuse, before training, a task without bounded continuous actions (or none known)."""
    env = context.env
    if env is None or env.discrete:
        got = "no env" if env is None else f"{env.task_id} has {env.num_actions} discrete actions"
        raise ConfigError(
            "algo",
            f"{name} needs bounded continuous (Box) actions; {got}",
            "a continuous-action task (env=halfcheetah, hopper, pendulum, ...), or for "
            "discrete actions algo=ga, es, dqn, ppo or appo",
        )


def log_weights(parents: int) -> torch.Tensor:
    """CEM's recombination weights ``log((K + 1) / i)``, normalised to sum to one."""
    ranks = torch.arange(1, parents + 1, dtype=torch.float64)
    weights = torch.log((parents + 1) / ranks)
    return weights / weights.sum()


class CEMRL(Algorithm):
    """A diagonal-Gaussian CEM over actors, half of which take TD3 steps each generation."""

    config_class = CEMRLConfig
    requires_env = True

    def __init__(self, config: CEMRLConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        require_continuous_task("cem_rl", context)
        self.mean = context.initial_params.detach().double().clone()
        self.variance = torch.full_like(self.mean, config.sigma_init)
        self.damp = config.damp
        self.weights = log_weights(config.parent_count)
        self.rng = algorithm_rng(context.seed)
        self.replay = evaluated_replay(config, context)
        self.notices: list[str] = []
        self.td3 = TD3Update.for_algorithm(config, context)
        self.last_env_steps = 0
        """Env steps the previous generation played: how long the learners train."""
        self.elite: torch.Tensor | None = None
        self.elite_fitness = -np.inf
        self._members: torch.Tensor | None = None
        self._training_stats: dict[str, float] = {}

    def wants_transitions(self) -> bool:
        return True

    def ask(self) -> Population:
        config = self.config
        draws = self.rng.standard_normal((config.population_size, len(self.mean)))
        members = self.mean + torch.from_numpy(draws) * self.variance.sqrt()
        if config.elitism and self.elite is not None:
            members[-1] = self.elite.double()
        members = members.float()
        self._training_stats = {}
        if self.replay.learning and self.last_env_steps:
            self.replay.restart_sampling(self.generation)
            # New draws: their Adam and target copies start afresh (the paper's).
            learners = StackedActors(members[: config.learning_actors], config.actor_learning_rate)
            self._training_stats = self.td3.train(
                learners,
                self.replay,
                actor_steps=round(config.actor_steps_per_env_step * self.last_env_steps),
                critic_steps=round(config.critic_steps_per_env_step * self.last_env_steps),
            )
            members[: config.learning_actors] = learners.params.detach()
        self._members = members
        return Population.dense(members)

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        config, members = self.config, self._members.double()
        if result.transitions is not None:
            store_evaluated(self.replay, result.transitions, self.context.env)
        fitness = np.nan_to_num(result.fitness, nan=-np.inf)
        order = torch.from_numpy(np.argsort(-fitness, kind="stable")[: config.parent_count])
        parents = members[order]
        previous = self.mean
        self.mean = self.weights @ parents
        self.variance = self.weights @ (parents - previous).square() + self.damp
        self.damp = config.damp_tau * self.damp + (1 - config.damp_tau) * config.damp_limit
        best = int(order[0])
        if fitness[best] > self.elite_fitness:
            self.elite_fitness = float(fitness[best])
            self.elite = self._members[best].clone()
            self.best_params = self.elite
        self.last_env_steps = int(result.env_steps)
        self.generation += 1
        stats = {
            "mean_std": float(self.variance.sqrt().mean()),
            "damp": float(self.damp),
            "buffer": float(len(self.replay)),
            **self._training_stats,
        }
        learners = config.learning_actors
        if self._training_stats:
            # Did the gradient steps pay? The learners' mean fitness beside the others'.
            stats["learner_fitness"] = float(np.mean(fitness[:learners]))
            stats["drawn_fitness"] = (
                float(np.mean(fitness[learners:])) if learners < len(fitness) else float("nan")
            )
        return stats

    def policy_params(self) -> torch.Tensor:
        return self.mean.float()

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "generation": self.generation,
            "mean": self.mean,
            "variance": self.variance,
            "damp": self.damp,
            "rng": self.rng.bit_generator.state,
            "td3": self.td3.state_dict(),
            "last_env_steps": self.last_env_steps,
            "elite": self.elite,
            "elite_fitness": self.elite_fitness,
        }
        return state | self.replay.state_dict(self.config.checkpoint_replay)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self.mean, self.variance = state["mean"], state["variance"]
        self.damp = float(state["damp"])
        self.rng.bit_generator.state = state["rng"]
        self.td3.load_state_dict(state["td3"])
        self.last_env_steps = int(state["last_env_steps"])
        self.elite, self.elite_fitness = state["elite"], float(state["elite_fitness"])
        self.best_params = self.elite
        self.replay.load_state_dict(state, self.notices)
