"""Multi-agent worlds (``env.parallel_env``: PettingZoo's parallel envs, an agent a lane of
the pool: :mod:`neuroplug.envs.multi_agent`)."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class MultiAgent(EnvFamily):
    """Each agent's reward is its score, episodes end where the world says, no frame skip;
    chosen by the pool kind, never detected for a one-agent task."""

    name = "multi_agent"
    registration = ""
    detection_order = 3000
    default_behavior = None  # a final observation of one agent says little of the team

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return False


FAMILY = MultiAgent()
