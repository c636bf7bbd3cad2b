"""Multi-agent worlds (``env.parallel_env``: PettingZoo's parallel envs, an agent a lane of
the pool: :mod:`neuroplug.envs.multi_agent`)."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class MultiAgent(EnvFamily):
    """Each agent's score is its ``info["score"]`` (its reward where its env reports none:
    :mod:`neuroplug.envs.multi_agent.lanes`), episodes end where the world says, no frame
    skip; chosen by the pool kind, never detected for a one-agent task."""

    name = "multi_agent"
    score_info_key = "score"  # the lanes pool's; a shaped reward's game still counts its score
    registration = ""
    detection_order = 3000
    default_behavior = None  # a final observation of one agent says little of the team

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return False


FAMILY = MultiAgent()
