"""What gradient-based learners share: the base class that runs segments on a sampler of
persistent EnvPool envs, an actor-critic over the policy network's flat parameters,
advantage estimators, and a population of learners acting in one forward (what ``algo=pbt``
builds on; see :class:`neuroplug.api.Learner` for the contract, and the guide's (docs/plugins.md) "Write
your own learner")."""

from neuroplug.learners.actor_critic import ActorCritic
from neuroplug.learners.advantages import rollout_gae
from neuroplug.learners.base import SegmentLearner
from neuroplug.learners.population import LearnerPopulation
from neuroplug.learners.sampler import Rollout

__all__ = ["ActorCritic", "LearnerPopulation", "Rollout", "SegmentLearner", "rollout_gae"]
