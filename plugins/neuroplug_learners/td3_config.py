"""The settings of ``algo=td3`` (:mod:`neuroplug_learners.td3`), in a module that imports
no torch: the command line checks a value before anything is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import Mutable, Preset
from neuroplug.errors import require
from neuroplug_learners.off_policy_config import OffPolicyConfig


@dataclass
class TD3Config(OffPolicyConfig):
    """TD3 (Fujimoto et al. 2018) for bounded continuous actions; ``None`` fields take
    CleanRL's ``td3_continuous_action.py`` settings. The actor is the policy network
    (``net``: 256-256 ReLU on vector tasks, as CleanRL's; ``net.activation=tanh`` for
    tanh)."""

    learning_rate: float | None = None
    """Adam step size of the actor and the critics (CleanRL: 3e-4)."""
    exploration_noise: float = 0.1
    """Std of the Gaussian added to the squashed action while acting (of the box's half
    width)."""
    policy_noise: float = 0.2
    """Std of the target policy's smoothing noise."""
    noise_clip: float = 0.5
    """The smoothing noise is clipped to +- this."""

    hidden_activation: ClassVar[str] = "relu"
    """The actor's hidden layers: ReLU, as CleanRL's script and Fujimoto et al.'s."""

    mutable: ClassVar[dict[str, Mutable]] = {
        **OffPolicyConfig.mutable,
        "learning_rate": Mutable(1e-6, 1e-1),
        "exploration_noise": Mutable(1e-3, 1.0),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()  # continuous actions only: a discrete task is refused
        return {
            "continuous": base["continuous"].extended(
                "CleanRL td3_continuous_action.py (one env; 4 steps per learning phase)",
                num_envs=1,
                rollout_length=4,
                segment_steps=10_000,
                buffer_size=1_000_000,
                batch_size=256,
                learning_starts=25_000,
                policy_frequency=2,
                critic_hidden=[256, 256],
                learning_rate=3e-4,
            )
        }

    def check(self) -> None:
        super().check()
        require(
            self.learning_rate > 0, "algo.learning_rate", f"got {self.learning_rate}", "a float > 0"
        )
        for name in ("exploration_noise", "policy_noise", "noise_clip"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
