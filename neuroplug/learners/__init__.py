"""What gradient-based learners share: actor-critic over the policy network's flat
parameters, a sampler on persistent EnvPool envs, advantage estimators, and the base
class that runs segments (see :class:`neuroplug.api.Learner` for the contract)."""
