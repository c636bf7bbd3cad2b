"""The deployed policy as the population an evaluation plays: one policy on every lane of
its worlds, or a world's policies per team or agent each on its own agents' lanes."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.envs.multi_agent.mapping import env_policies
from neuroplug.envs.spec import EnvSpec
from neuroplug.population.members import Population


def deployed_population(
    params: torch.Tensor, env: EnvSpec, worlds: int
) -> tuple[Population, dict[str, Any]]:
    """``(population, request settings)`` playing ``worlds`` episodes of ``env`` (worlds of
    a multi-agent env, every agent's episode counted) with ``params``: ``(D,)`` one member
    on every lane (``worlds`` x agents episodes); ``(K, D)`` the policies of
    ``env.policy_mapping``, world ``w``'s agent ``a`` member ``w k + a`` (the policy of
    ``a``), one episode each, numbered as the one member's would be, so the worlds are the
    ones a shared policy plays. Either way the returns come back world by world, agent by
    agent. The settings are an :class:`~neuroplug.api.EvaluationRequest`'s
    ``episodes_per_member`` and ``episodes``."""
    lanes = worlds * env.lanes_per_env
    if params.dim() == 1:
        return Population.dense(params.unsqueeze(0)), {"episodes_per_member": lanes}
    mapping = env_policies(env)
    if len(params) != len(mapping):
        raise ValueError(
            f"{len(params)} policies for {env.task_id}'s mapping of {len(mapping)} "
            f"({', '.join(mapping.names)})"
        )
    owners = torch.as_tensor(mapping.lane_policies(lanes))
    members = len(owners)
    population = Population(
        bases=params.float(),
        base_index=owners,
        scale=torch.zeros(members, dtype=torch.float32),
        seed=torch.zeros(members, dtype=torch.int64),
    )
    return population, {"episodes_per_member": 1, "episodes": np.arange(lanes)}
