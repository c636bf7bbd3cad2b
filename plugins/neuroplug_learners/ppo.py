"""``algo=ppo``: proximal policy optimisation, synchronous.

Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal Policy Optimization
Algorithms", arXiv:1707.06347, with the details of CleanRL's ``ppo.py`` /
``ppo_atari_envpool.py``. Per rollout::

    sample T steps of N envs with pi_old            (K groups of envs double-buffered)
    A, R = GAE(gamma, lambda) on the rollout       (truncated episodes bootstrapped)
    lr <- lr0 * (1 - steps / budget)               (when anneal_lr)
    PPO update: E epochs of M minibatches          (neuroplug.learners.ppo_update)

Transitions of EnvPool's auto-reset steps (their actions are ignored) are left out. The
envs live for the whole run; action sampling and minibatch order come from a generator
seeded by (run seed, segment), so a run is reproducible from its seed on CPU, and a resumed
one from its checkpoint (see :mod:`neuroplug.learners.base` for what resuming loses).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from neuroplug.api import LearnerContext
from neuroplug.learners.actor_critic import ActorCritic
from neuroplug.learners.advantages import rollout_gae
from neuroplug.learners.base import SegmentLearner
from neuroplug.learners.ppo_population_update import PopulationPPOUpdate, population_ppo_update
from neuroplug.learners.ppo_update import PPOUpdate, PPOUpdateConfig, flatten
from neuroplug.learners.sampler import Rollout


@dataclass
class PPOConfig(PPOUpdateConfig):
    """PPO settings (CleanRL's Atari defaults; ``conf/algo/ppo.yaml`` names the sources)."""


class PPO(SegmentLearner):
    """Synchronous PPO on double-buffered EnvPool envs."""

    config_class = PPOConfig

    def __init__(self, config: PPOConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.update = PPOUpdate(config, self.model)

    @classmethod
    def population_update(cls, members, envs_per_member: int) -> PopulationPPOUpdate | None:
        """The members' PPO updates stacked into one computation where their networks
        allow it (:mod:`neuroplug.learners.ppo_population_update`)."""
        return population_ppo_update(members, envs_per_member)

    def build_model(self) -> ActorCritic:
        return ActorCritic.for_learner(self.context)

    def _train(self) -> tuple[dict[str, float], dict[str, float]]:
        config = self.config
        rollouts = math.ceil(self.segment_length() / (config.num_envs * config.rollout_length))
        stats: dict[str, float] = {}
        learning = 0.0
        for _ in range(rollouts):
            self.model.eval()
            rollout = self.sample(self.act, self.rollout_steps())
            started = time.perf_counter()
            stats = self.learn_rollout(rollout)
            learning += time.perf_counter() - started
        return stats, {"learn": learning}

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """GAE, then the PPO update on one rollout; returns the update's stats."""
        config = self.config
        self.update.set_learning_rate_fraction(self.learning_rate_fraction())
        advantages, returns = rollout_gae(rollout, config.gamma, config.gae_lambda)
        return self.update.run(flatten(rollout, advantages, returns), self.generator)

    def _state(self) -> dict[str, Any]:
        return self.update.state_dict()

    def _load_state(self, state: dict[str, Any]) -> None:
        self.update.load_state_dict(state)
