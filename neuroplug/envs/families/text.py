"""Text tasks with verifiable rewards (:mod:`neuroplug.envs.text`): prompts, completions
written a token a step, a reward on each completion."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily
from neuroplug.envs.text import GYMNASIUM_IDS


class Text(EnvFamily):
    """A completion's reward is its score; no behaviour characterises it; the network
    ``auto`` picks is the cached causal transformer."""

    name = "text"
    registration = ""
    detection_order = 40
    default_behavior = None
    writes_text = True
    # A step appends a token to a list: next to nothing beside the forward, so an
    # evaluation's P x B generations all run at once (common prompts for every member).
    engine_lanes = 4096

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return False

    def detects_gymnasium(self, env_name: str) -> bool:
        return env_name.rsplit(":", 1)[-1] in (*GYMNASIUM_IDS, "TextTaskEnv")

    def default_network(self, is_image: bool) -> str:
        return "causal_lm"


FAMILY = Text()
