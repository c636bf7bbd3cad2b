"""Classic control (CartPole, Pendulum, ...) and any task no other family claims."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class Classic(EnvFamily):
    """Vector observations, no frame skip; the fallback of detection."""

    name = "classic"
    registration = "envpool.classic_control.registration"
    detection_order = 1000

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return True


FAMILY = Classic()
