"""Gymnasium envs no other family claims (``env=gymnasium``): a user's own, or a registered
gymnasium task EnvPool does not ship."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class Gymnasium(EnvFamily):
    """The reward is the score, episodes end where the env says, no frame skip; the
    fallback for gymnasium envs (it never claims an EnvPool task)."""

    name = "gymnasium"
    registration = ""
    detection_order = 2000

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return False


FAMILY = Gymnasium()
