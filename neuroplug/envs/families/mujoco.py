"""MuJoCo locomotion through EnvPool's gym interface (HalfCheetah, Hopper, Humanoid, ...)."""

from __future__ import annotations

from typing import Any

from neuroplug.envs.family import EnvFamily


class MuJoCo(EnvFamily):
    """Vector observations; the agent's position is in ``info`` (``x_position``) and frames
    need an offscreen OpenGL context."""

    name = "mujoco"
    registration = "envpool.mujoco.gym.registration"
    detection_order = 30
    default_behavior = "final_position"
    renders_with_opengl = True

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return "xml_file" in settings or "frame_stack" in settings


FAMILY = MuJoCo()
