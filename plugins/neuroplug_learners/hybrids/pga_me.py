"""``algo=pga_me``: policy-gradient-assisted MAP-Elites.

Nilsson & Cully (2021), "Policy Gradient Assisted MAP-Elites", GECCO, Algorithm 1 (with
QDax's defaults)::

    archive <- empty;  critics Q1, Q2 (TD3), greedy actor pi_g, replay buffer R
    generation 0: evaluate population_size fresh networks into the archive
    every later generation, a batch of offspring:
        ga_proportion of them by Iso+LineDD from uniformly drawn elites (as map_elites)
        the rest: an elite each, then pg_steps steps of maximising Q1(s, pi(s)) on
            minibatches of R (Adam, policy_learning_rate), the critics fixed
        (inject_greedy: pi_g takes one of the PG places)
        evaluate the batch; each offspring takes its cell if empty or better; steps -> R
        critic_steps TD3 critic steps with pi_g's target as the target policy,
            pi_g one step (and its target) every policy_frequency of them

The PG offspring take their steps as one stacked computation (one forward and backward of
all of them per step, :class:`~neuroplug_learners.td3.TD3Update`); the batch acts
in one batched forward over its alive members on any scheduler, which returns every step
played. The archive is :mod:`neuroplug.evolution.archive` (the same as ``map_elites``),
checkpointed as lineage nodes (:mod:`neuroplug.evolution.lineage`): an Iso+LineDD child as
its parents' nodes and a seed, a PG child or the greedy actor as weights. Where those
weights would outnumber the elites (Iso+LineDD children of PG children that have since
lost their cells), the lineage is rebased onto the elites' weights, so a checkpoint never
holds more than one weight vector per occupied cell.

Departures: the actor is the run's ``net`` (QDax: 128-128 on Brax); the descriptor is the
env family's (``final_position`` on MuJoCo, not the feet-contact rates the paper used,
which EnvPool's MuJoCo info does not expose).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution import EvolutionAlgorithm, lineage
from neuroplug.evolution.archive import build_archive
from neuroplug.population.members import Population
from neuroplug_learners.hybrids.cem_rl import require_continuous_task
from neuroplug_learners.hybrids.pga_me_config import PGAMEConfig
from neuroplug_learners.td3 import StackedActors, TD3Update, evaluated_replay, store_evaluated


class PGAME(EvolutionAlgorithm):
    """MAP-Elites whose offspring come from Iso+LineDD and from a TD3 critic's gradient."""

    config_class = PGAMEConfig
    requires_env = True

    def __init__(self, config: PGAMEConfig, context: AlgorithmContext) -> None:
        super().__init__(config, context)
        require_continuous_task("pga_me", context)
        self.archive = build_archive(config, context)
        self.replay = evaluated_replay(config, context)
        self.notices: list[str] = []
        self.td3 = TD3Update.for_algorithm(config, context)
        self.greedy = StackedActors(context.initial_params.unsqueeze(0), config.actor_learning_rate)
        self._pg_stats: dict[str, float] = {}
        self.lineage = lineage.for_archive(config, self.num_params, self.fresh_params)
        self._nodes: list[int] = []
        """The lineage nodes of the batch asked last."""
        # The archive's elites are rebuilt from the lineage on load, the best among them.
        self.checkpoints_best_params = False

    def behavior(self) -> str | None:
        return self.config.behavior

    def wants_transitions(self) -> bool:
        return True

    def _ask(self) -> Population:
        config, occupied = self.config, self.archive.occupied
        size = config.population_size
        self._pg_stats = {}
        # One sampling stream a generation, for its ask's and its tell's gradient steps.
        self.replay.restart_sampling(self.generation)
        if len(occupied) == 0:
            ids, first = self.lineage.fresh(self.draw_seeds(size), self.draw_seeds(size))
            self._nodes = ids.tolist()
            return Population.dense(first)
        ga = size if not self.replay.learning else round(size * config.ga_proportion)
        ids, children = lineage.iso_line_offspring(self.lineage, self.archive, ga, self.rng)
        offspring, nodes = [children], ids.tolist()
        pg = size - ga - (int(config.inject_greedy) if ga < size else 0)
        if pg > 0:
            parents = self.archive.params[torch.from_numpy(self.rng.choice(occupied, pg))]
            learners = StackedActors(parents, config.policy_learning_rate)
            stats = self.td3.train(learners, self.replay, config.pg_steps, 0)
            self._pg_stats = {"pg_actor_loss": stats["actor_loss"]}
            offspring.append(learners.params.detach())
        if ga < size and config.inject_greedy:
            offspring.append(self.greedy.params.detach())
        members = torch.cat(offspring)
        nodes += self.lineage.add_weights(members[ga:]).tolist()
        self._nodes = nodes
        return Population.dense(members)

    def _tell(
        self, population: Population, fitness: np.ndarray, result: EvaluationResult
    ) -> dict[str, float]:
        config = self.config
        descriptors = result.behaviors.reshape(*result.behaviors.shape[:2], -1).mean(axis=1)
        added = self.archive.add(
            population.materialize(device="cpu"), fitness, descriptors, self._nodes
        )
        lineage.prune(self.lineage, self.archive)
        self.best_params = self.archive.params[self.archive.best()].clone()
        if result.transitions is not None:
            store_evaluated(self.replay, result.transitions, self.context.env)
        stats = {**self.archive.metrics(config.qd_offset), **added, **self._pg_stats}
        if self.replay.learning:
            trained = self.td3.train(
                self.greedy,
                self.replay,
                actor_steps=config.critic_steps // config.policy_frequency,
                critic_steps=config.critic_steps,
            )
            stats.update({f"greedy_{key}": value for key, value in trained.items()})
        stats["buffer"] = float(len(self.replay))
        return stats

    def policy_params(self) -> torch.Tensor:
        return self.best_params.clone()

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "archive": self.archive.state_dict(compact=True),
            "lineage": self.lineage.state_dict(),
            "td3": self.td3.state_dict(),
            "greedy": self.greedy.state_dict(),
        }
        return state | self.replay.state_dict(self.config.checkpoint_replay)

    def _load_state(self, state: dict[str, Any]) -> None:
        lineage.load_archive(self.lineage, self.archive, state)
        if len(self.archive.occupied):
            self.best_params = self.archive.params[self.archive.best()].clone()
        self.td3.load_state_dict(state["td3"])
        self.greedy.load_state_dict(state["greedy"])
        self.replay.load_state_dict(state, self.notices)
