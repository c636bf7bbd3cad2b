"""DeepMind Control Suite tasks (dict observations, flattened in the task's own order)."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class DMControl(EnvFamily):
    """Vector observations; a few tasks observe the agent's position directly."""

    name = "dm_control"
    registration = "envpool.mujoco.dmc.registration"
    detection_order = 0
    renders_with_opengl = True
    position_entries = {
        "PointMass": ("position", 2),
        "Cartpole": ("position", 1),
        "HumanoidRunPureState": ("position", 2),
    }

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return type(envpool_spec).__name__.startswith("Dmc")  # EnvPool's DeepMind Control specs


FAMILY = DMControl()
