"""What gradient-based learners share: the base class that runs segments on a sampler of
persistent EnvPool envs, an actor-critic over the policy network's flat parameters,
advantage estimators, and a population of learners acting in one forward (what ``algo=pbt``
builds on; see :class:`neuroplug.api.Learner` for the contract, and the guide's (docs/plugins.md) "Write
your own learner")."""

from neuroplug.rl.actor_critic import ActorCritic
from neuroplug.rl.advantages import rollout_gae
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.learner_population import LearnerPopulation
from neuroplug.rl.sampler import Rollout

__all__ = ["ActorCritic", "LearnerPopulation", "Rollout", "SegmentLearner", "rollout_gae"]
