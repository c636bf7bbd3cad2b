"""The PPO update, shared by the synchronous and the asynchronous learner.

Schulman et al. (2017), arXiv:1707.06347, with CleanRL's details (Huang et al. 2022, "The
37 Implementation Details of PPO"). Given a rollout's transitions with their advantages
``A`` and value targets ``R``::

    for epoch in 1..E, for each of M minibatches:
        ratio = pi(a|s) / pi_old(a|s);  A standardised per minibatch
        L = -min(ratio A, clip(ratio, 1-eps, 1+eps) A)
            + c_v * max((V - R)^2, (clip(V, V_old +- eps) - R)^2) / 2  -  c_e * H
        Adam step on L, gradients clipped to max_grad_norm

``algo=ppo`` feeds it GAE on fresh rollouts; ``algo=appo`` feeds it rollouts a few policy
versions old, with GAE or V-trace targets.

A step costs what its arithmetic costs, not autograd's bookkeeping: the loss's gradient with
respect to the network's outputs is written out (:mod:`neuroplug.learners.ppo_loss`), an
MLP actor-critic carries it to its tensors with no graph (:meth:`ActorCritic.
forward_for_gradients`), and the tensors and their gradients live in one buffer each
(:mod:`neuroplug.learners.flat_parameters`), so Adam, the clip and the zeroing are a call
each. On RL Zoo's CartPole settings this halved the update's time on the 2-core CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from neuroplug.api import LearnerConfig, Mutable, Preset
from neuroplug.errors import require
from neuroplug.learners.actor_critic import ActorCritic
from neuroplug.learners.flat_adam import FlatAdam
from neuroplug.learners.flat_parameters import FlatParameters
from neuroplug.learners.ppo_loss import LOSS_STATS, ppo_loss_gradients


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
    else ``run.max_generations`` segments)."""
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
        for name in ("rollout_length", "epochs", "minibatches"):
            value = getattr(self, name)
            require(value >= 1, f"algo.{name}", f"got {value}", "an integer >= 1")
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
class Batch:
    """A rollout's valid transitions, flattened, with their advantages and targets."""

    observations: torch.Tensor
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor

    def __len__(self) -> int:
        return len(self.log_probs)

    def scalars(self) -> torch.Tensor:
        """``(n, 4)``: log-probs, values, advantages and returns side by side, so a minibatch
        gathers them with one index instead of four."""
        return torch.stack([self.log_probs, self.values, self.advantages, self.returns], 1)


class PPOUpdate:
    """Clipped-surrogate minibatch epochs on one model, with its Adam state."""

    def __init__(self, config: PPOUpdateConfig, model: ActorCritic) -> None:
        self.config = config
        self.model = model
        self.trained = FlatParameters([p for p in model.parameters() if p.requires_grad])
        self.optimizer = FlatAdam(self.trained.flat, config.learning_rate, eps=1e-5)
        self.version = 0
        """SGD steps taken: the policy's version."""

    def set_learning_rate_fraction(self, fraction: float) -> None:
        """Scale the learning rate (a linear schedule passes 1 -> 0)."""
        if self.config.anneal_lr:
            self.optimizer.learning_rate = fraction * self.config.learning_rate

    def run(self, batch: Batch, generator: torch.Generator) -> dict[str, float]:
        """E epochs of M minibatches; returns the last epoch's mean losses."""
        config = self.config
        self.model.train()
        self.trained.check_seated()
        size = len(batch)
        step = max(1, size // config.minibatches)
        scalars = batch.scalars()
        whole = (batch.observations, batch.actions, scalars)
        last_epoch: list[torch.Tensor] = []
        for epoch in range(config.epochs):
            last = epoch == config.epochs - 1
            # One minibatch of every row: its losses are means, so the order is moot.
            order = (
                None
                if step == size
                else torch.randperm(size, generator=generator, device=generator.device)
            )
            for start in range(0, size - step + 1, step):
                if order is None:
                    observations, actions, rows = whole
                else:
                    chosen = order[start : start + step]
                    observations, actions, rows = (part[chosen] for part in whole)
                outputs, values, backward = self.model.forward_for_gradients(observations)
                grads = ppo_loss_gradients(
                    config, self.model.distribution(outputs), values, actions, rows, last
                )
                self.trained.zero_grad()
                backward(grads)
                self.trained.clip_grad_norm_(config.max_grad_norm)
                self.optimizer.step()
                self.version += 1
                if last:
                    last_epoch.append(grads.stats)
        # One read of the statistics per update (on a GPU, one sync instead of five a step).
        means = torch.stack(last_epoch).mean(0).tolist() if last_epoch else [0.0] * len(LOSS_STATS)
        variance = float(batch.returns.var()) if size > 1 else 0.0
        residual = float((batch.returns - batch.values).var()) if size > 1 else 0.0
        return {
            **dict(zip(LOSS_STATS, means, strict=True)),
            "learning_rate": self.optimizer.learning_rate,
            "explained_variance": 1.0 - residual / variance if variance > 0 else 0.0,
            "policy_version": float(self.version),
        }

    def state_dict(self) -> dict[str, Any]:
        """Adam state and the policy version."""
        return {"optimizer": self.optimizer.state_dict(), "updates": self.version}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.version = int(state["updates"])


def flatten(rollout, advantages: torch.Tensor, returns: torch.Tensor) -> Batch:
    """The valid transitions of ``rollout`` as one :class:`Batch`."""
    rows = torch.nonzero(rollout.valid.reshape(-1)).squeeze(1)

    def flat(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.reshape(-1, *tensor.shape[2:])[rows]

    return Batch(
        flat(rollout.observations),
        flat(rollout.actions),
        flat(rollout.log_probs),
        flat(rollout.values),
        flat(advantages),
        flat(returns),
    )
