"""``algo=ppo``: proximal policy optimization, synchronous.

Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal Policy Optimization
Algorithms", arXiv:1707.06347, with the details of CleanRL's ``ppo.py`` /
``ppo_atari_envpool.py``. Per rollout::

    sample T steps of N envs with pi_old            (K groups of envs double-buffered)
    A, R = GAE(gamma, lambda) on the rollout       (truncated episodes bootstrapped)
    lr <- lr0 * (1 - steps / budget)               (when anneal_lr)
    PPO update: E epochs of M minibatches          (neuroplug_learners.ppo_update)

Transitions of EnvPool's auto-reset steps (their actions are ignored) are left out. The
envs live for the whole run; action draws and minibatch order come from streams seeded by
(run seed, segment), so a run is reproducible from its seed on CPU, and a resumed one from
its checkpoint (see :mod:`neuroplug.rl.rollout_loop` for what resuming loses).

The loss, its written-out gradient and the update are :mod:`neuroplug_learners.ppo_update`
(``algo=appo`` shares them); a population's members (``algo=pbt``) stack their updates
into one computation in :mod:`neuroplug_learners.ppo_stacked`.
"""

from __future__ import annotations

from typing import Any

from neuroplug.api import LearnerContext
from neuroplug.rl.actor_critic import ActorCritic
from neuroplug.rl.advantages import rollout_gae
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.sampler import Rollout
from neuroplug_learners.ppo_config import PPOConfig
from neuroplug_learners.ppo_stacked import PopulationPPOUpdate, population_ppo_update
from neuroplug_learners.ppo_update import PPOUpdate, chunked, flatten


class PPO(SegmentLearner):
    """Synchronous PPO on double-buffered EnvPool envs."""

    config_class = PPOConfig
    trains_recurrent_cores = True
    """``net.core=gru`` trains: the sampler keeps each env's state, the update re-runs the
    core over chunks of ``algo.recurrence`` steps (:func:`chunked`)."""

    def __init__(self, config: PPOConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.update = PPOUpdate(config, self.model)

    @classmethod
    def population_update(cls, members, envs_per_member: int) -> PopulationPPOUpdate | None:
        """The members' PPO updates stacked into one computation where their networks
        allow it (:mod:`neuroplug_learners.ppo_stacked`)."""
        return population_ppo_update(members, envs_per_member)

    def build_model(self) -> ActorCritic:
        return ActorCritic.for_learner(self.context)

    def describe(self) -> str:
        return self.update.precision_note

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """GAE, then the PPO update on one rollout; returns the update's stats."""
        config = self.config
        self.update.set_learning_rate_fraction(self.learning_rate_fraction())
        advantages, returns = rollout_gae(rollout, config.gamma, config.gae_lambda)
        if rollout.states is not None:
            length = config.recurrence if config.recurrence > 0 else len(rollout.valid)
            chunks = chunked(rollout, advantages, returns, length)
            return self.update.run_chunks(chunks, self.generator)
        return self.update.run(flatten(rollout, advantages, returns), self.generator)

    def _state(self) -> dict[str, Any]:
        return self.update.state_dict()

    def _load_state(self, state: dict[str, Any]) -> None:
        self.update.load_state_dict(state)
