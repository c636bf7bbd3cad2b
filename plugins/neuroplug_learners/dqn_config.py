"""The settings of ``algo=dqn``: its config schema, beside :mod:`neuroplug_learners.dqn`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.learner_configs`` entry point ``dqn``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import LearnerConfig, Mutable, Preset
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import require


@dataclass
class DQNConfig(LearnerConfig):
    """DQN (Mnih et al. 2015) settings. Unset (``None``) fields take the reference
    settings of the run's kind of task (:meth:`presets`; the start-up line names the one
    used): the Nature DQN's on frames (clipped rewards, a lost life ending the learner's
    episode; Adam and the learning start as CleanRL's ``dqn_atari.py``), RL Zoo's
    CartPole-v1 DQN (in shorter rounds, with double DQN and 3-step returns) on vector
    tasks."""

    buffer_size: int | None = None
    """Transitions kept (Nature DQN: 1M)."""
    batch_size: int | None = None
    """Transitions per gradient step."""
    learning_rate: float | None = None
    """Adam step size."""
    gamma: float = 0.99
    """Discount."""
    learning_starts: int | None = None
    """Env steps stored before learning begins."""
    train_frequency: int | None = None
    """Env steps per env between training phases."""
    gradient_steps: int | None = None
    """Gradient steps per training phase."""
    target_update_interval: int | None = None
    """Env steps between copies of Q into the target network."""
    exploration_fraction: float | None = None
    """Share of the run's budget over which epsilon falls from 1 to ``final_epsilon``."""
    final_epsilon: float | None = None
    """Epsilon after the decay (Nature DQN: 0.1)."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip."""
    double_q: bool | None = None
    """Double DQN: the online network picks the next action, the target values it."""
    n_step: int | None = None
    """Rewards summed per target before bootstrapping (1: the Nature DQN; Rainbow: 3)."""
    checkpoint_replay: bool = False
    """Keep the replay buffer in checkpoints (large on Atari; makes resume exact on CPU)."""

    # What population-based training may change (the discount is built into the buffer's
    # n-step returns, so it stays).
    mutable: ClassVar[dict[str, Mutable]] = {
        "learning_rate": Mutable(1e-8, 1.0),
        "max_grad_norm": Mutable(1e-2, 100.0),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()
        # RL Zoo's CartPole-v1 DQN (buffer 100k, learning starts 1000, epsilon 1 -> 0.04
        # over 16% of the budget, a gradient step per two env steps) in rounds of 8 envs x 8
        # steps then 32 gradient steps, the target copied after each round; plus double DQN
        # and Rainbow's 3-step returns. RL Zoo trains a 256-256 ReLU net at lr 2.3e-3 and
        # batch 64; on the 64-64 tanh net env=cartpole picks, lr 1e-3 and batch 128 solved
        # for seeds 0-2 where those did not (benchmarks/results/learners.md). Segments of
        # 500 steps: the default budget of 100 segments is then RL Zoo's budget of 50k
        # steps, over whose first 16% epsilon falls.
        vector = base["discrete"].extended(
            "RL Zoo CartPole-v1 DQN in rounds of 8x8 steps, lr 1e-3, batch 128, double DQN, "
            "3-step returns",
            num_envs=8,
            segment_steps=500,
            buffer_size=100_000,
            batch_size=128,
            learning_rate=1e-3,
            learning_starts=1000,
            train_frequency=8,
            gradient_steps=32,
            target_update_interval=10,
            exploration_fraction=0.16,
            final_epsilon=0.04,
            double_q=True,
            n_step=3,
        )
        return {
            "pixels": base["pixels"].extended(
                "the Nature DQN (Adam at 1e-4 and learning from 80k steps, as CleanRL's dqn_atari.py)",
                num_envs=1,
                env_groups=1,
                segment_steps=50_000,
                buffer_size=1_000_000,
                batch_size=32,
                learning_rate=1e-4,
                learning_starts=80_000,
                train_frequency=4,
                gradient_steps=1,
                target_update_interval=10_000,
                exploration_fraction=0.1,
                final_epsilon=0.1,
                double_q=False,
                n_step=1,
            ),
            "discrete": vector,
        }

    def memory_bytes(self, env: EnvSpec) -> int:
        # Imported here: the buffer module imports torch, this schema does not.
        from neuroplug.rl.replay_buffer import ReplayBuffer

        return ReplayBuffer.bytes_needed(self.buffer_size, self.num_envs, env)

    def check_task(self, env: EnvSpec) -> None:
        require(
            env.discrete,
            "algo",
            f"dqn needs discrete actions; {env.task_id} has continuous ones",
            "a task with discrete actions, or for continuous ones algo=sac, td3, ppo or appo",
        )

    def check(self) -> None:
        super().check()
        require(
            self.batch_size >= 1, "algo.batch_size", f"got {self.batch_size}", "an integer >= 1"
        )
        require(
            self.buffer_size >= self.batch_size,
            "algo.buffer_size",
            f"{self.buffer_size} is smaller than algo.batch_size={self.batch_size}",
            "an integer >= algo.batch_size",
        )
        require(
            0.0 <= self.final_epsilon <= 1.0,
            "algo.final_epsilon",
            f"got {self.final_epsilon}",
            "a float in [0, 1]",
        )
        require(
            0.0 <= self.exploration_fraction <= 1.0,
            "algo.exploration_fraction",
            f"got {self.exploration_fraction}",
            "a float in [0, 1]",
        )
        require(0 <= self.gamma <= 1, "algo.gamma", f"got {self.gamma}", "a float in [0, 1]")
        require(
            self.learning_rate > 0, "algo.learning_rate", f"got {self.learning_rate}", "a float > 0"
        )
        require(
            self.buffer_size >= self.n_step * self.num_envs,
            "algo.buffer_size",
            f"{self.buffer_size} cannot hold algo.n_step={self.n_step} steps of "
            f"algo.num_envs={self.num_envs} envs",
            "an integer >= algo.n_step * algo.num_envs",
        )
        for name in ("train_frequency", "gradient_steps", "target_update_interval", "n_step"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.learning_starts >= 0,
            "algo.learning_starts",
            f"got {self.learning_starts}",
            "an integer >= 0",
        )
