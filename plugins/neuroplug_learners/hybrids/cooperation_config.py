"""Settings ``cem_rl`` and ``erl`` share: the off-policy learning beside the population
(replay buffer, TD3's critic and actor steps), in a module that imports no torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuroplug.api import AlgorithmConfig
from neuroplug.errors import require
from neuroplug_learners.critic_settings import check_critic_settings


@dataclass
class CooperationConfig(AlgorithmConfig):
    """The RL half of an evolution-and-RL method: TD3 (Fujimoto et al. 2018) from one replay
    buffer that the whole population's episodes fill."""

    buffer_size: int = 1_000_000
    """Transitions the replay buffer keeps (the most recent)."""
    learning_starts: int = 10_000
    """Transitions in the buffer before the first gradient step."""
    batch_size: int = 100
    """Transitions per minibatch (per learning actor)."""
    gamma: float = 0.99
    """Discount."""
    tau: float = 0.005
    """Target networks move this share of the way per update."""
    actor_learning_rate: float = 1e-3
    """Adam step size of a learning actor."""
    critic_learning_rate: float = 1e-3
    """Adam step size of the twin critics."""
    policy_noise: float = 0.2
    """Std of the target policy's smoothing noise (unit box)."""
    noise_clip: float = 0.5
    """The smoothing noise is clipped to +- this."""
    critic_hidden: list[int] = field(default_factory=lambda: [400, 300])
    """The twin critics' hidden widths (ReLU)."""
    checkpoint_replay: bool = True
    """Keep the replay buffer in checkpoints (off: a resumed run starts with an empty one
    and waits for learning_starts transitions again)."""

    def check(self) -> None:
        super().check()
        for name in ("buffer_size", "batch_size"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        check_critic_settings(self)
        for name in ("actor_learning_rate", "critic_learning_rate"):
            value = getattr(self, name)
            require(value > 0, f"algo.{name}", f"got {value}", "a float > 0")
        for name in ("policy_noise", "noise_clip"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
