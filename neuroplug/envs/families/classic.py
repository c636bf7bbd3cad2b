"""Classic control (CartPole, Pendulum, ...) and any task no other family claims."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class Classic(EnvFamily):
    """Vector observations, no frame skip; the fallback of detection."""

    name = "classic"
    registration = "envpool.classic_control.registration"
    detection_order = 1000
    # A CartPole step costs EnvPool less than the engine's own work per step: with 1,024
    # lanes instead of 256, MAP-Elites and CMA-MAE on CartPole (1,024 evaluations a
    # generation) stepped faster with the same archives
    # (benchmarks/results/quality_diversity_cartpole.md). The envs cost next to no memory.
    engine_lanes = 1024

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return True


FAMILY = Classic()
