"""The settings of ``algo=sac`` (:mod:`neuroplug_learners.sac`), in a module that imports
no torch: the command line checks a value before anything is built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import Mutable, Preset
from neuroplug.errors import require
from neuroplug_learners.off_policy_config import OffPolicyConfig

LOG_STD_SOURCES = ("trunk", "network")
"""The values of ``algo.log_std_from``."""


@dataclass
class SACConfig(OffPolicyConfig):
    """SAC with automatic entropy tuning (Haarnoja et al. 2018); ``None`` fields take
    CleanRL's ``sac_continuous_action.py`` settings. The actor's mean is the policy
    network (``net``: 256-256 ReLU on vector tasks, as CleanRL's)."""

    policy_lr: float | None = None
    """Adam step size of the actor (CleanRL: 3e-4)."""
    q_lr: float | None = None
    """Adam step size of the critics and of the temperature (CleanRL: 1e-3)."""
    target_network_frequency: int = 1
    """Gradient steps between the critics' target updates."""
    alpha: float = 0.2
    """The entropy temperature without ``autotune`` (CleanRL's ``--alpha``)."""
    autotune: bool = True
    """Learn alpha towards the target entropy -|A| (Haarnoja et al. 2018b)."""
    alpha_init: float = 1.0
    """With ``autotune``, the temperature's starting value: CleanRL's ``log_alpha = 0``
    and Stable-Baselines3's ``ent_coef="auto"`` (on Hopper a start at 0.2 learned slower
    to 80k steps in two seeds; docs/learners/td3-sac.md)."""
    log_std_from: str = "trunk"
    """Where the actor's log-std comes from: ``trunk``, a linear head on the policy
    network's last hidden features (CleanRL's); ``network``, a second network of the
    policy's shape (a whole-policy ``net.type=module``, which has no hidden features)."""
    log_std_min: float = -5.0
    log_std_max: float = 2.0
    """The actor's log-std is tanh-squashed into [log_std_min, log_std_max]."""

    hidden_activation: ClassVar[str] = "relu"
    """The actor's hidden layers: ReLU, as CleanRL's script and Haarnoja et al.'s."""
    initialization: ClassVar[str] = "uniform"
    """The policy network starts as ``nn.Linear``'s default, as CleanRL's SAC script's (not
    OpenAI ES's ``normc``: its unit-norm hidden units take smaller relative Adam steps)."""

    mutable: ClassVar[dict[str, Mutable]] = {
        **OffPolicyConfig.mutable,
        "policy_lr": Mutable(1e-6, 1e-1),
        "q_lr": Mutable(1e-6, 1e-1),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()
        return {
            "continuous": base["continuous"].extended(
                "CleanRL sac_continuous_action.py (one env; 4 steps per learning phase)",
                num_envs=1,
                rollout_length=4,
                segment_steps=10_000,
                buffer_size=1_000_000,
                batch_size=256,
                learning_starts=5_000,
                policy_frequency=2,
                critic_hidden=[256, 256],
                policy_lr=3e-4,
                q_lr=1e-3,
            )
        }

    def check(self) -> None:
        super().check()
        for name in ("policy_lr", "q_lr", "alpha", "alpha_init"):
            value = getattr(self, name)
            require(value > 0, f"algo.{name}", f"got {value}", "a float > 0")
        # Before alpha_init, algo.alpha was also the tuned temperature's start: a value set
        # with autotune would now be ignored without a word.
        require(
            not self.autotune or self.alpha == SACConfig.alpha,
            "algo.alpha",
            f"{self.alpha} is the fixed temperature, unused with algo.autotune=true",
            "algo.alpha_init=<start> for the tuned temperature's start, or "
            "algo.autotune=false to keep alpha fixed",
        )
        require(
            self.target_network_frequency >= 1,
            "algo.target_network_frequency",
            f"got {self.target_network_frequency}",
            "an integer >= 1",
        )
        require(
            self.log_std_from in LOG_STD_SOURCES,
            "algo.log_std_from",
            f"got {self.log_std_from!r}",
            " or ".join(LOG_STD_SOURCES),
        )
        require(
            self.log_std_min < self.log_std_max,
            "algo.log_std_min",
            f"{self.log_std_min} is not below algo.log_std_max={self.log_std_max}",
            "log_std_min < log_std_max",
        )
