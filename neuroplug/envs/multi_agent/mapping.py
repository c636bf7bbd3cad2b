"""Which policy acts for each agent of a multi-agent world (``env.policy_mapping``).

``shared``: one policy for every agent; ``per_team``: a policy per role (the agent's name
without its index, :func:`~neuroplug.envs.multi_agent.maker.role_of`: ``adversary_0`` and
``adversary_1`` are team ``adversary``); ``per_agent``: a policy per agent; or a mapping of
agent or role names to policy names (``{adversary: chasers, agent_0: runner}``, an agent's
own name winning over its role's), which must give every agent a policy.

Every policy is one network of the run's shape (the observations padded to the longest
agent's, as for a shared policy), so the policies act together in one batched forward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from neuroplug.config.schema import POLICY_MAPPINGS
from neuroplug.envs.multi_agent.maker import role_of
from neuroplug.errors import ConfigError


@dataclass(frozen=True)
class PolicyMapping:
    """The policies of a world and the agents each acts for."""

    names: tuple[str, ...]
    """Each policy's name (``shared``, a role, an agent, or the user's), in order."""
    of_agent: tuple[int, ...]
    """The policy of each agent, in the env's agent order."""

    def __len__(self) -> int:
        return len(self.names)

    def agents_of(self, policy: int) -> tuple[int, ...]:
        """The agents (offsets in a world) that ``policy`` acts for."""
        return tuple(agent for agent, mine in enumerate(self.of_agent) if mine == policy)

    def words(self, agents: Sequence[str]) -> str:
        """Each policy and the agents it acts for: ``adversary (adversary_0, adversary_1);
        agent (agent_0)``."""
        return "; ".join(
            f"{name} ({', '.join(agents[i] for i in self.agents_of(k))})"
            for k, name in enumerate(self.names)
        )

    def lane_policies(self, num_envs: int) -> np.ndarray:
        """``(num_envs,)``: the policy of each lane of a pool of whole worlds (a world's
        agents in consecutive lanes, :mod:`neuroplug.envs.multi_agent.lanes`)."""
        agents = len(self.of_agent)
        return np.tile(np.asarray(self.of_agent, np.int64), num_envs // agents)

    def lanes(self, num_envs: int) -> list[np.ndarray]:
        """Each policy's lanes in such a pool, in order."""
        owners = self.lane_policies(num_envs)
        return [np.flatnonzero(owners == policy) for policy in range(len(self.names))]


def policy_mapping(agents: Sequence[str], setting: Any) -> PolicyMapping:
    """``env.policy_mapping`` (``setting``) for a world of ``agents``; a mapping that leaves
    an agent without a policy, or names no agent, is refused naming the setting."""
    agents = tuple(agents)
    if setting == "shared" or not agents:
        return PolicyMapping(("shared",), (0,) * max(1, len(agents)))
    if setting == "per_agent":
        return PolicyMapping(agents, tuple(range(len(agents))))
    if setting == "per_team":
        roles = tuple(role_of(agent) for agent in agents)
        names = tuple(dict.fromkeys(roles))
        return PolicyMapping(names, tuple(names.index(role) for role in roles))
    if not isinstance(setting, Mapping):
        raise ConfigError(
            "env.policy_mapping",
            f"got {setting!r}",
            ", ".join(POLICY_MAPPINGS) + ", or a mapping of agents or roles to policy names",
        )
    return _user_mapping(agents, setting)


def env_policies(env: Any) -> PolicyMapping:
    """Which policy acts for each agent of ``env`` (an :class:`~neuroplug.envs.spec.
    EnvSpec`: its agents and its ``policy_mapping``)."""
    return policy_mapping(env.agents, env.policy_mapping)


def _user_mapping(agents: tuple[str, ...], setting: Mapping[str, Any]) -> PolicyMapping:
    """A user's mapping of agent or role names to policy names."""
    known = dict.fromkeys([*agents, *(role_of(agent) for agent in agents)])
    unknown = [str(key) for key in setting if key not in known]
    if unknown:
        raise ConfigError(
            "env.policy_mapping",
            f"{', '.join(unknown)} is no agent or role of this env",
            "keys among " + ", ".join(known),
        )
    chosen = [setting.get(agent, setting.get(role_of(agent))) for agent in agents]
    left = [agent for agent, policy in zip(agents, chosen, strict=True) if policy is None]
    if left:
        roles = dict.fromkeys(role_of(agent) for agent in left)
        raise ConfigError(
            "env.policy_mapping",
            f"{', '.join(left)} {'has' if len(left) == 1 else 'have'} no policy",
            "a policy for every agent: add " + ", ".join(f"{role}: <policy>" for role in roles),
        )
    names = tuple(dict.fromkeys(str(policy) for policy in chosen))
    return PolicyMapping(names, tuple(names.index(str(policy)) for policy in chosen))
