"""ViZDoom (EnvPool's Doom scenarios: D1Basic ... D4Battle2, Deathmatch, ...), Sample
Factory's headline benchmark.

Observations are stacks of 4 grayscale 84x84 frames, each agent step repeats its action
for 4 game tics (``frame_skip``), and actions are EnvPool's combined discrete buttons
(``use_combined_action``, as Sample Factory plays Doom), so discrete learners and the
Nature CNN run on it unchanged. Scores are the scenario's rewards.
"""

from __future__ import annotations

import os
from typing import Any

from neuroplug.envs.family import EnvFamily
from neuroplug.errors import ConfigError


class ViZDoom(EnvFamily):
    """Doom scenarios: frame-skipped image stacks, combined discrete actions, no
    characterisation by default (the game variables are no behavior yet)."""

    name = "vizdoom"
    registration = "envpool.vizdoom.registration"
    detection_order = 10
    default_behavior = None
    video_from_observation = True
    native_fps = 35.0  # Doom's tics per second
    preset_kind = "doom"  # Sample Factory's Doom settings, where a learner has them

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        return type(envpool_spec).__name__.startswith("Vizdoom")

    def make_defaults(self) -> dict[str, Any]:
        return {"use_combined_action": True}

    def frame_skip(self, settings: dict[str, Any]) -> int:
        return int(settings.get("frame_skip", 1))

    def prepare_pool_start(self) -> None:
        prepare_engine_directory()


def prepare_engine_directory() -> None:
    """Make ``./_vizdoom/`` before Doom engines start side by side. Each engine makes it if
    it is missing, and engines started on parallel threads (EnvPool's pool, a multiplayer
    game's players) can both find it missing: the one whose mkdir fails ("Failed to create
    ./_vizdoom/ directory: File exists") takes the interpreter down with a segmentation
    fault. Made here first, no engine tries; refused naming ``env`` where it cannot be."""
    try:
        os.makedirs("_vizdoom", exist_ok=True)
    except OSError as error:
        raise ConfigError(
            "env",
            f"Doom's engines keep their files in ./_vizdoom/ of the working directory, "
            f"and {os.getcwd()} does not let it be made ({error.strerror or error})",
            "starting the run from a directory you can write",
        ) from None


FAMILY = ViZDoom()
