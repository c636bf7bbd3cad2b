"""A policy per team or per agent of a multi-agent world (``env.policy_mapping``): K learners
of the run's learner class, each owning its agents' lanes of every world.

The worlds stay whole in the env pool (a world's agents in consecutive lanes), so policy k
owns the lanes of its agents in every world, not a run of consecutive envs; every group
step is **one** forward of the K policies' stacked weights, each policy's lanes paired with
its weights (:class:`~neuroplug.rl.acting.LaneActing`). Per rollout::

    sample T steps of every lane (all K policies acting at once)
    policy k learns from its lanes' columns alone: its own agents' observations, actions
        and rewards (stacked into one update where the learner stacks them and the
        policies own as many lanes each; else one by one)

Each policy is a learner as it would be alone: its own weights, optimizer, streams and
schedules (which follow its own env steps; its budget is its lanes' share of the run's),
its ``num_envs`` its lanes, its ``segment_steps`` their share of the run's. A game's score
goes to the policy of the agent that played it; ``policy/<name>/return_mean`` is each
policy's mean over its last games. The deployed policy is every policy: ``policy_params()``
is ``(K, D)``, row k acting for the agents of :attr:`mapping`'s k-th name.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from neuroplug.api import LearnerConfig, LearnerContext
from neuroplug.envs.multi_agent.mapping import PolicyMapping, env_policies
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.learner_population import LearnerPopulation


def policy_shares(
    config: LearnerConfig, mapping: PolicyMapping
) -> tuple[list[LearnerConfig], np.ndarray]:
    """``config``'s ``num_envs`` lanes of whole worlds split among the policies of
    ``mapping``: each policy's config (its lanes its ``num_envs``, its ``segment_steps``
    their share of ``config``'s) and each lane's policy."""
    owners = mapping.lane_policies(config.num_envs)
    lanes = np.bincount(owners, minlength=len(mapping))
    configs = [
        dataclasses.replace(
            config,
            num_envs=int(count),
            segment_steps=max(1, math.ceil(config.segment_steps * count / config.num_envs)),
        )
        for count in lanes
    ]
    return configs, owners


class AgentPolicies(LearnerPopulation):
    """The policies of ``env.policy_mapping``, learning side by side (module docstring)."""

    def __init__(
        self, config: LearnerConfig, context: LearnerContext, learner_class: type[SegmentLearner]
    ) -> None:
        self.mapping: PolicyMapping = env_policies(context.env)
        member_configs, owners = policy_shares(config, self.mapping)
        super().__init__(config, context, learner_class, member_configs, lane_owners=owners)

    def mapping_words(self) -> str:
        """The mapping in words: each policy and the agents it acts for."""
        return f"{len(self.mapping)} policies: {self.mapping.words(self.context.env.agents)}"

    def policy_params(self) -> torch.Tensor:
        """``(K, D)``: every policy, row k the mapping's k-th."""
        return torch.stack([member.policy_params() for member in self.members])

    def segment_stats(self) -> dict[str, float]:
        """The members' statistics (their mean), and each policy's recent games' mean."""
        stats = super().segment_stats()
        del stats["best_member"]
        for k, name in enumerate(self.mapping.names):
            stats[f"policy/{name}/return_mean"] = stats.pop(f"member{k}/objective")
        return stats

    def describe(self) -> str:
        inner = self.members[0].describe()
        words = f"{self.mapping_words()}, acting in one batched forward"
        return f"{words}; {inner}" if inner else words
