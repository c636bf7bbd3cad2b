"""The settings of ``algo=ppo`` and of the PPO update ``appo`` shares: their config schemas,
beside :mod:`neuroplug_learners.ppo` (the update: :mod:`neuroplug_learners.ppo_update`).

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.learner_configs`` entry point ``ppo``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from neuroplug.api import LearnerConfig, Mutable, Preset
from neuroplug.errors import require

ENCODER_PRECISIONS = ("auto", "float32", "bfloat16")
"""The values of ``algo.encoder_precision``."""


@dataclass
class PPOUpdateConfig(LearnerConfig):
    """Settings of the PPO update. Unset (``None``) fields take the reference settings of
    the run's kind of task (:meth:`presets`): CleanRL's ``ppo_atari_envpool.py`` on frames
    (Sample Factory's Atari APPO uses the same), RL Zoo's CartPole-v1 PPO on discrete
    vector tasks, CleanRL's ``ppo_continuous_action.py`` on continuous ones."""

    rollout_length: int | None = None
    """T: steps per env per rollout."""
    epochs: int | None = None
    """E: passes over each rollout."""
    minibatches: int | None = None
    """M: minibatches per epoch."""
    learning_rate: float | None = None
    """Adam step size at the start."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to 0 over the run's budget (``run.max_frames``,
    else ``run.max_segments`` segments)."""
    gamma: float | None = None
    """Discount."""
    gae_lambda: float | None = None
    """GAE's lambda."""
    clip_coef: float | None = None
    """eps: the surrogate's (and the value loss's) clipping range."""
    clip_value_loss: bool = True
    """Clip the value loss around the old values."""
    value_coef: float = 0.5
    """c_v: weight of the value loss."""
    entropy_coef: float | None = None
    """c_e: weight of the entropy bonus."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    normalize_advantages: bool = True
    """Standardise advantages per minibatch."""
    recurrence: int = -1
    """With a recurrent core (``net.core=gru``): steps of backpropagation through time.
    The update re-runs the core over chunks of this many steps from the states stored at
    their starts, and minibatches are made of whole chunks (Sample Factory's
    ``--recurrence``); -1: the whole rollout. ``rollout_length`` must be a multiple."""
    encoder_precision: str = "float32"
    """The arithmetic of the encoder (the layers before the core, or before the heads) in
    the update's forward and backward: ``float32``, or ``bfloat16``, run under PyTorch's
    autocast (mixed precision: the weights, Adam's moments, the core, the heads and the
    losses stay float32; acting stays float32). ``auto``: ``bfloat16`` for a
    convolutional encoder on a CPU that computes it natively (AVX512-BF16 or AMX), where
    it made an update of the Atari preset faster
    (``benchmarks/results/encoder_precision.md``), ``float32`` elsewhere. Elsewhere
    PyTorch emulates bfloat16, slower than float32; the start-up line says which."""

    # What population-based training may change: Sample Factory's mutable PPO settings
    # (its learning rate, entropy and value coefficients, clip ratio, gradient-norm clip,
    # and, when asked, the discount).
    mutable: ClassVar[dict[str, Mutable]] = {
        "learning_rate": Mutable(1e-8, 1.0),
        "entropy_coef": Mutable(0.0, 1.0),
        "value_coef": Mutable(1e-3, 10.0),
        "clip_coef": Mutable(1e-2, 1.0),
        "max_grad_norm": Mutable(1e-2, 100.0),
        "gamma": Mutable(0.5, 0.9999, complement=True),
    }

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        base = super().presets()
        return {
            "pixels": base["pixels"].extended(
                "CleanRL ppo_atari_envpool.py",
                rollout_length=128,
                epochs=4,
                minibatches=4,
                learning_rate=2.5e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.1,
                entropy_coef=0.01,
            ),
            # Sample Factory's Doom settings (sample_factory/cfg/cfg.py and
            # sf_examples/vizdoom/doom/doom_params.py): batches of 1024 transitions, one
            # epoch of one minibatch, rollouts of 32 steps (its BPTT length with a core);
            # its exploration loss coefficient as the entropy's.
            "doom": base["pixels"].extended(
                "Sample Factory sf_examples/vizdoom",
                num_envs=32,
                env_groups=2,
                reward_clip=False,
                episodic_life=False,
                rollout_length=32,
                epochs=1,
                minibatches=1,
                learning_rate=1e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.1,
                entropy_coef=0.001,
            ),
            "discrete": base["discrete"].extended(
                "RL Zoo CartPole-v1 PPO",
                rollout_length=32,
                epochs=20,
                minibatches=1,
                learning_rate=1e-3,
                gamma=0.98,
                gae_lambda=0.8,
                clip_coef=0.2,
                entropy_coef=0.0,
            ),
            "continuous": base["continuous"].extended(
                "CleanRL ppo_continuous_action.py",
                num_envs=1,
                segment_steps=16384,
                rollout_length=2048,
                epochs=10,
                minibatches=32,
                learning_rate=3e-4,
                gamma=0.99,
                gae_lambda=0.95,
                clip_coef=0.2,
                entropy_coef=0.0,
            ),
        }

    def check(self) -> None:
        super().check()
        require(
            self.recurrence == -1 or self.recurrence >= 1,
            "algo.recurrence",
            f"got {self.recurrence}",
            "-1 (the whole rollout) or an integer >= 1",
        )
        if self.recurrence >= 1:
            require(
                self.rollout_length % self.recurrence == 0,
                "algo.recurrence",
                f"{self.recurrence} does not divide algo.rollout_length={self.rollout_length}",
                "a divisor of algo.rollout_length, or -1",
            )
        for name in ("rollout_length", "epochs", "minibatches"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
        require(
            self.encoder_precision in ENCODER_PRECISIONS,
            "algo.encoder_precision",
            f"got {self.encoder_precision!r}",
            ", ".join(ENCODER_PRECISIONS),
        )
        transitions = self.num_envs * self.rollout_length
        require(
            self.minibatches <= transitions,
            "algo.minibatches",
            f"{self.minibatches} minibatches of {transitions} transitions",
            "at most algo.num_envs * algo.rollout_length",
        )
        require(
            self.learning_rate > 0, "algo.learning_rate", f"got {self.learning_rate}", "a float > 0"
        )
        for name in ("gamma", "gae_lambda"):
            value = getattr(self, name)
            require(0 <= value <= 1, f"algo.{name}", f"got {value}", "a float in [0, 1]")
        require(self.clip_coef > 0, "algo.clip_coef", f"got {self.clip_coef}", "a float > 0")
        for name in ("value_coef", "entropy_coef", "max_grad_norm"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")


@dataclass
class PPOConfig(PPOUpdateConfig):
    """PPO (Schulman et al. 2017) settings: the update's, whose presets name their sources
    (:class:`PPOUpdateConfig`); the start-up line names the preset a run used, and any
    ``algo.<field>`` on the command line wins (``algo=ppo env=pong algo.num_envs=64``)."""

    reward_norm: bool | None = None
    """Train on rewards divided by the running std of each env's discounted return,
    clipped to +-10 (:mod:`neuroplug.rl.reward_scaling`; CleanRL's ``NormalizeReward``):
    on by the ``continuous`` preset (CleanRL's ``ppo_continuous_action.py``), off
    elsewhere (Atari clips its rewards instead). Scores are reported unscaled."""

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        presets = super().presets()
        return {
            kind: Preset(preset.source, {**preset.values, "reward_norm": kind == "continuous"})
            for kind, preset in presets.items()
        }
