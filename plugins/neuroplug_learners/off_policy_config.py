"""The settings ``td3`` and ``sac`` share (an off-policy actor-critic on bounded Box
actions, learning from a replay buffer), in a module that imports no torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import LearnerConfig, Mutable
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import require
from neuroplug_learners.critic_settings import check_critic_settings


@dataclass
class OffPolicyConfig(LearnerConfig):
    """A replay buffer, twin critics and target networks; ``None`` fields take CleanRL's
    settings (:meth:`presets` of each learner)."""

    rollout_length: int | None = None
    """T: steps of every env between learning phases (one gradient step per env step)."""
    buffer_size: int | None = None
    """Transitions kept (CleanRL: 1M)."""
    batch_size: int | None = None
    """Transitions per gradient step (CleanRL: 256)."""
    learning_starts: int | None = None
    """Env steps taken with uniformly random actions before learning begins."""
    gamma: float = 0.99
    """Discount."""
    tau: float = 0.005
    """Target networks move this share of the way to the trained ones per update."""
    policy_frequency: int | None = None
    """Critic steps per actor step (TD3's delay; SAC takes this many actor steps at once)."""
    critic_hidden: list[int] | None = None
    """The twin critics' hidden widths (CleanRL: 256, 256, ReLU)."""
    checkpoint_replay: bool = True
    """Keep the replay buffer in checkpoints (a resume then continues exactly where its
    envs allow; off: a resumed run refills the buffer for learning_starts steps)."""

    mutable: ClassVar[dict[str, Mutable]] = {"tau": Mutable(1e-4, 1.0)}

    def memory_bytes(self, env: EnvSpec) -> int:
        from neuroplug.rl.replay_buffer import ReplayBuffer  # torch: not at import

        return ReplayBuffer.bytes_needed(self.buffer_size, self.num_envs, env)

    def check_task(self, env: EnvSpec) -> None:
        require(
            not env.discrete,
            "algo",
            f"{self.name} needs bounded continuous (Box) actions; {env.task_id} has "
            f"{env.num_actions} discrete ones",
            "a continuous-action task (env=halfcheetah, hopper, pendulum, ...), or for "
            "discrete actions algo=dqn, ppo or appo",
        )

    def check(self) -> None:
        super().check()
        for name in ("rollout_length", "batch_size", "policy_frequency"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.buffer_size >= max(self.batch_size, self.num_envs),
            "algo.buffer_size",
            f"{self.buffer_size} is smaller than algo.batch_size={self.batch_size} or "
            f"algo.num_envs={self.num_envs}",
            "an integer >= both",
        )
        check_critic_settings(self)
