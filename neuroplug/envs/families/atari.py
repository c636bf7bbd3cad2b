"""Atari 2600 games (EnvPool v5: frame skip 4, grayscale 84x84 stacks of 4)."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class Atari(EnvFamily):
    """Scores are the unclipped game points (``info['reward']``), evaluation episodes
    start with seeded no-ops played by the engine, and without sticky actions a pool
    plays any episode again from its seed, so pools are kept between evaluations."""

    name = "atari"
    registration = "envpool.atari.registration"
    detection_order = 20
    default_behavior = "final_ram"
    score_info_key = "reward"
    game_over_info_key = "terminated"
    video_from_observation = True
    native_fps = 60.0

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return "img_height" in settings and "frame_skip" in settings

    def frame_skip(self, settings: dict[str, Any]) -> int:
        return int(settings.get("frame_skip", 1))

    def start_noops(self, settings: dict[str, Any]) -> int:
        return int(settings.get("noop_max", 0))

    def reusable_pools(self, settings: dict[str, Any]) -> bool:
        return float(settings.get("repeat_action_probability", 0.0)) == 0.0

    def engine_pool_settings(self) -> dict[str, Any]:
        # EnvPool's own random no-ops off: the engine plays each episode's seeded count.
        return {"noop_max": 1}


FAMILY = Atari()
