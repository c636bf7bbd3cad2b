"""``algo=ppo``: proximal policy optimization, synchronous.

Schulman, Wolski, Dhariwal, Radford & Klimov (2017), "Proximal Policy Optimization
Algorithms", arXiv:1707.06347, with the details of CleanRL's ``ppo.py`` /
``ppo_atari_envpool.py``. Per rollout::

    sample T steps of N envs with pi_old            (K groups of envs double-buffered)
    A, R = GAE(gamma, lambda) on the rollout       (truncated episodes bootstrapped)
    lr <- lr0 * (1 - steps / budget)               (when anneal_lr)
    PPO update: E epochs of M minibatches          (below)

Transitions of EnvPool's auto-reset steps (their actions are ignored) are left out. The
envs live for the whole run; action draws and minibatch order come from streams seeded by
(run seed, segment), so a run is reproducible from its seed on CPU, and a resumed one from
its checkpoint (see :mod:`neuroplug.rl.rollout_loop` for what resuming loses).

This file reads top to bottom: the loss (:func:`ppo_loss`, the definition, and
:func:`ppo_loss_gradients`, its gradient written out), the update that steps it
(:class:`PPOUpdate`, which ``algo=appo`` shares), and the learner (:class:`PPO`). How a
rollout becomes minibatches is :mod:`neuroplug_learners.ppo_batches`; a population's
members (``algo=pbt``) stack their updates into one computation in
:mod:`neuroplug_learners.ppo_stacked`.

The loss
--------
For ``n`` transitions with policy outputs ``z`` (logits, or Gaussian means with a learned
log-std ``s``), values ``V``, and the rollout's log-probs, values ``V_old``, advantages
``A`` (standardised per minibatch) and targets ``R``::

    r   = exp(log pi(a|z) - log pi_old(a))
    L   = mean(max(-A r, -A clip(r, 1-eps, 1+eps)))                    policy loss
        + c_v * mean(max((V - R)^2, (V_old + clip(V - V_old, +-eps) - R)^2)) / 2
        - c_e * mean(H(pi(.|z)))

:func:`ppo_loss` is that formula as code, the definition, differentiable by autograd.
Training uses its gradient written out rather than autograd's: it is a dozen elementwise
operations on ``(K, b, actions)`` tensors (K members' minibatches; K = 1 for a lone
learner), where recording and walking the same loss as a graph costs more than twice as
much on a small network. Its parts:

- ``dL/dr`` is ``-A/n``, except where the clipped term is the larger: there the clip has
  changed ``r`` (it is outside the range) and passes no gradient, so 0; then
  ``dL/dlog pi(a) = r dL/dr``, and ``dL/dH = -c_e/n``;
- the distribution carries those to its parameters
  (:meth:`~neuroplug.rl.distributions.Categorical.gradients`);
- ``dL/dV = (c_v/n) (V - R)``, except where the clipped error is the larger: the clip
  has changed ``V`` there and passes no gradient, so 0.

Each member's means run over its own valid rows (a ``mask``; a lone learner's minibatch
holds valid rows only) with its own ``eps``, ``c_v`` and ``c_e``.
``tests/plugins/neuroplug_learners/test_ppo_loss.py`` checks every case against autograd
on :func:`ppo_loss`, for one learner and for members side by side.

The update
----------
Schulman et al. (2017) with CleanRL's details (Huang et al. 2022, "The 37 Implementation
Details of PPO"). Given a rollout's transitions with their advantages ``A`` and value
targets ``R``::

    for epoch in 1..E, for each of M minibatches:
        L = the loss above on the minibatch
        Adam step on L, gradients clipped to max_grad_norm

``algo=ppo`` feeds it GAE on fresh rollouts; ``algo=appo`` feeds it rollouts a few policy
versions old, with GAE or V-trace targets.

A step costs what its arithmetic costs, not autograd's bookkeeping: the loss's gradient with
respect to the network's outputs is written out (:func:`ppo_loss_gradients`), an
MLP actor-critic carries it to its tensors with no graph (:meth:`ActorCritic.
forward_for_gradients`), and the tensors and their gradients live in one buffer each
(:mod:`neuroplug.rl.flat_parameters`), so Adam, the clip and the zeroing are a call
each (``benchmarks/results/ppo_vs_sb3.json`` measures the result).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch

from neuroplug.api import LearnerContext
from neuroplug.optim.adam import FlatAdam
from neuroplug.rl.actor_critic import ActorCritic, OutputGradients
from neuroplug.rl.advantages import rollout_gae
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.distributions import Categorical, DiagonalGaussian
from neuroplug.rl.flat_parameters import FlatParameters
from neuroplug.rl.reward_scaling import RewardScaler
from neuroplug.rl.sampler import Rollout
from neuroplug_learners.ppo_batches import Batch, Chunks, chunked, flatten, minibatch_orders
from neuroplug_learners.ppo_config import PPOConfig, PPOUpdateConfig
from neuroplug_learners.ppo_stacked import PopulationPPOUpdate, population_ppo_update

# -------------------------------------------------------------------------- the loss

LOSS_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
"""What :func:`ppo_loss_gradients` reports of a minibatch, in order."""


class PPOLossSettings(Protocol):
    """The settings the loss reads (:class:`PPOUpdateConfig`, or each a ``(K, 1)`` column
    for members side by side: :class:`neuroplug_learners.ppo_stacked.MemberSettings`)."""

    clip_coef: float | torch.Tensor
    clip_value_loss: bool
    value_coef: float | torch.Tensor
    entropy_coef: float | torch.Tensor
    normalize_advantages: bool


@dataclass
class LossGradients(OutputGradients):
    """The loss's gradient with respect to the network's outputs, and its statistics."""

    stats: torch.Tensor | None = None
    """:data:`LOSS_STATS`, one tensor (read once per update, not per step); None when not
    asked for."""


def ppo_loss(
    settings: PPOLossSettings,
    outputs: torch.Tensor,
    log_std: torch.Tensor | None,
    values: torch.Tensor,
    actions: torch.Tensor,
    rows: torch.Tensor,
) -> torch.Tensor:
    """Schulman et al.'s clipped PPO loss of one minibatch (the module docstring's formula),
    with torch's own distributions: the definition :func:`ppo_loss_gradients` computes the
    gradient of. ``outputs`` are logits (``log_std`` None) or Gaussian means; ``rows`` is
    ``(n, 4)``: old log-probs, old values, advantages and targets."""
    old_log_probs, old_values, advantages, returns = rows.unbind(1)
    if settings.normalize_advantages and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    if log_std is None:
        distribution = torch.distributions.Categorical(logits=outputs)
        log_probs, entropy = distribution.log_prob(actions), distribution.entropy()
    else:
        distribution = torch.distributions.Normal(outputs, log_std.exp())
        log_probs = distribution.log_prob(actions).sum(1)
        entropy = distribution.entropy().sum(1)
    ratio = (log_probs - old_log_probs).exp()
    eps = settings.clip_coef
    policy_loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1 - eps, 1 + eps))
    error = (values - returns) ** 2
    if settings.clip_value_loss:
        clipped = old_values + (values - old_values).clamp(-eps, eps)
        error = torch.max(error, (clipped - returns) ** 2)
    value_loss = 0.5 * error.mean()
    return (
        policy_loss.mean()
        + settings.value_coef * value_loss
        - settings.entropy_coef * entropy.mean()
    )


@torch.no_grad()
def ppo_loss_gradients(
    settings: PPOLossSettings,
    policy: Categorical | DiagonalGaussian,
    values: torch.Tensor,
    actions: torch.Tensor,
    rows: torch.Tensor,
    mask: torch.Tensor | None = None,
    statistics: bool = True,
) -> LossGradients:
    """The PPO loss's gradients for K members' minibatches side by side, ``(K, b, ...)``,
    acting by ``policy`` with ``values``; ``rows`` is ``(K, b, 4)``: old log-probs, old
    values, advantages and targets. ``mask`` ``(K, b)`` marks the rows that count (None:
    all). Each member's loss is its own: means over its rows, its own coefficients. The
    statistics, ``(K, 5)``, are left out (None) unless asked for: an update reports its
    last epoch's."""
    eps = settings.clip_coef
    old_log_probs, old_values, advantages, returns = rows.unbind(-1)
    if mask is None:
        count = values.shape[1]
        scale = 1.0 / count
    else:
        count = mask.sum(1, keepdim=True)
        scale = 1.0 / count.clamp_min(1.0)
    if settings.normalize_advantages:
        advantages = _standardised(advantages, mask, count)

    log_ratio = policy.log_prob(actions) - old_log_probs
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - eps, 1 + eps)
    # The clipped term is the larger only where the clip changed r (outside its range),
    # and there the clip passes no gradient; elsewhere the gradient flows through r.
    grad_log_prob = torch.where(clipped > unclipped, 0.0, unclipped * scale)
    grad_entropy = -settings.entropy_coef * scale
    grad_values = (values - returns) * (settings.value_coef * scale)
    if mask is not None:
        grad_log_prob = grad_log_prob * mask
        grad_entropy = grad_entropy * mask
        grad_values = grad_values * mask
    grad_outputs, grad_log_std = policy.gradients(actions, grad_log_prob, grad_entropy)

    value_error = (values - returns).pow(2)
    if settings.clip_value_loss:
        # clip(V, V_old +- eps): V itself inside the range, where the error is unchanged.
        clipped_values = torch.clamp(values, old_values - eps, old_values + eps)
        clipped_error = (clipped_values - returns).pow(2)
        grad_values = torch.where(clipped_error > value_error, 0.0, grad_values)
        value_error = torch.maximum(value_error, clipped_error)

    stats = None
    if statistics:

        def mean(tensor: torch.Tensor) -> torch.Tensor:
            if mask is None:
                return tensor.mean(1)
            return (tensor * mask).sum(1) * scale.squeeze(1)

        stats = torch.stack(
            [
                mean(torch.maximum(unclipped, clipped)),
                0.5 * mean(value_error),
                mean(policy.entropy()),
                mean((ratio - 1) - log_ratio),
                mean(((ratio - 1.0).abs() > eps).float()),
            ],
            1,
        )
    return LossGradients(grad_outputs, grad_values, grad_log_std, stats)


def _standardised(
    advantages: torch.Tensor, mask: torch.Tensor | None, count: int | torch.Tensor
) -> torch.Tensor:
    """Each member's advantages ``(K, b)`` standardised over its rows that count (left as
    they are where fewer than two count)."""
    if mask is None:
        if count < 2:
            return advantages
        deviation, mean = torch.std_mean(advantages, dim=1, keepdim=True)
        return (advantages - mean) / (deviation + 1e-8)
    n = count.clamp_min(1.0)
    mean = (advantages * mask).sum(1, keepdim=True) / n
    variance = ((advantages - mean).pow(2) * mask).sum(1, keepdim=True) / (n - 1).clamp_min(1)
    standardised = (advantages - mean) / (variance.sqrt() + 1e-8)
    return torch.where(count > 1, standardised, advantages)


# ------------------------------------------------------------------------ the update


# ------------------------------------------------------------------------ the update


class PPOUpdate:
    """Clipped-surrogate minibatch epochs on one model, with its Adam state."""

    stat_names: ClassVar[tuple[str, ...]] = LOSS_STATS
    """What :meth:`run` reports of the loss (a stacked update reports the same)."""

    loss_gradients = staticmethod(ppo_loss_gradients)
    """The loss's written-out gradient this update steps (members stacked side by side
    step the same: :mod:`neuroplug_learners.ppo_stacked` reads it here)."""

    def __init__(self, config: PPOUpdateConfig, model: ActorCritic) -> None:
        self.config = config
        self.model = model
        self.trained = FlatParameters([p for p in model.parameters() if p.requires_grad])
        self.optimizer = FlatAdam(self.trained.flat, config.learning_rate, eps=1e-5)
        self.version = 0
        """SGD steps taken: the policy's version."""
        self.precision_note = model.train_encoder_in(config.encoder_precision)
        """What the start-up line says of the encoder's precision ("" for float32)."""

    def set_learning_rate_fraction(self, fraction: float) -> None:
        """Scale the learning rate (a linear schedule passes 1 -> 0)."""
        if self.config.anneal_lr:
            self.optimizer.learning_rate = fraction * self.config.learning_rate

    def run(self, batch: Batch, generator: torch.Generator) -> dict[str, float]:
        """E epochs of M minibatches; returns the last epoch's mean losses."""
        self.model.train()
        self.trained.check_seated()
        whole = (batch.observations, batch.actions, batch.scalars())
        last_epoch: list[torch.Tensor] = []
        for chosen, last in self._minibatches(len(batch), generator):
            parts = whole if chosen is None else (part[chosen] for part in whole)
            observations, actions, rows = parts
            outputs, values, backward = self.model.forward_for_gradients(observations)
            self._step(outputs, values, backward, actions, rows, last_epoch if last else None)
        return self._stats(last_epoch, batch.returns, batch.values)

    def run_chunks(self, chunks: Chunks, generator: torch.Generator) -> dict[str, float]:
        """:meth:`run` for a recurrent model: E epochs of M minibatches of whole chunks,
        the core re-run over each chunk from its stored state (truncated BPTT); only the
        valid steps count in the loss."""
        self.model.train()
        self.trained.check_seated()
        last_epoch: list[torch.Tensor] = []
        for chosen, last in self._minibatches(chunks.count, generator):
            chosen = slice(None) if chosen is None else chosen
            valid = torch.nonzero(chunks.valid[:, chosen].reshape(-1)).squeeze(1)
            outputs, values, backward = self.model.sequence_for_gradients(
                chunks.observations[:, chosen],
                chunks.states[chosen],
                chunks.starts[:, chosen],
                valid,
            )
            actions = chunks.actions[:, chosen]
            actions = actions.reshape(-1, *actions.shape[2:])[valid]
            rows = chunks.scalars[:, chosen].reshape(-1, 4)[valid]
            self._step(outputs, values, backward, actions, rows, last_epoch if last else None)
        scalars = chunks.scalars.reshape(-1, 4)[chunks.valid.reshape(-1)]
        return self._stats(last_epoch, scalars[:, 3], scalars[:, 1])

    def _minibatches(
        self, size: int, generator: torch.Generator
    ) -> Iterator[tuple[torch.Tensor | None, bool]]:
        """E epochs of M minibatches of ``size`` rows (:func:`minibatch_orders`, for this
        one learner)."""
        config = self.config
        for orders, last in minibatch_orders(
            size, config.epochs, config.minibatches, [generator], generator.device
        ):
            yield (None if orders is None else orders[0]), last

    def _step(self, outputs, values, backward, actions, rows, stats: list | None) -> None:
        """One SGD step on a minibatch's outputs; its loss statistics go to ``stats``."""
        config = self.config
        # The loss's gradient over a population of one: this minibatch is member 0's.
        stacked = ppo_loss_gradients(
            config,
            self.model.distribution(outputs.unsqueeze(0)),
            values.unsqueeze(0),
            actions.unsqueeze(0),
            rows.unsqueeze(0),
            statistics=stats is not None,
        )
        grads = LossGradients(
            stacked.outputs[0],
            stacked.values[0],
            stacked.log_std,
            None if stacked.stats is None else stacked.stats[0],
        )
        self.trained.zero_grad()
        backward(grads)
        self.trained.clip_grad_norm_(config.max_grad_norm)
        self.optimizer.step()
        self.version += 1
        if stats is not None:
            stats.append(grads.stats)

    def _stats(
        self, last_epoch: list[torch.Tensor], returns: torch.Tensor, values: torch.Tensor
    ) -> dict[str, float]:
        """The update's report: the last epoch's mean losses and the critic's fit."""
        # One read of the statistics per update (on a GPU, one sync instead of five a step).
        means = torch.stack(last_epoch).mean(0).tolist() if last_epoch else [0.0] * len(LOSS_STATS)
        size = len(returns)
        variance = float(returns.var()) if size > 1 else 0.0
        residual = float((returns - values).var()) if size > 1 else 0.0
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


# ----------------------------------------------------------------------- the learner


class PPO(SegmentLearner):
    """Synchronous PPO on double-buffered EnvPool envs."""

    config_class = PPOConfig
    trains_recurrent_cores = True
    """``net.core=gru`` trains: the sampler keeps each env's state, the update re-runs the
    core over chunks of ``algo.recurrence`` steps (:func:`chunked`)."""

    def __init__(self, config: PPOConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.update = PPOUpdate(config, self.model)
        self.reward_scaler = (
            RewardScaler(config.num_envs, config.gamma) if config.reward_norm else None
        )
        """Scales the rewards the update trains on (``algo.reward_norm``); None: raw."""

    def scaled(self, rollout: Rollout) -> Rollout:
        """``rollout`` with the rewards the update trains on (``algo.reward_norm``)."""
        if self.reward_scaler is None:
            return rollout
        rewards = self.reward_scaler.scale(rollout.rewards, rollout.valid, rollout.ended)
        return dataclasses.replace(rollout, rewards=rewards)

    @classmethod
    def population_update(cls, members, envs_per_member: int) -> PopulationPPOUpdate | None:
        """The members' PPO updates stacked into one computation where their networks
        allow it (:mod:`neuroplug_learners.ppo_stacked`)."""
        return population_ppo_update(members)

    def build_model(self) -> ActorCritic:
        return ActorCritic.for_learner(self.context)

    def describe(self) -> str:
        return self.update.precision_note

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """GAE, then the PPO update on one rollout; returns the update's stats."""
        config = self.config
        self.update.set_learning_rate_fraction(self.learning_rate_fraction())
        rollout = self.scaled(rollout)
        advantages, returns = rollout_gae(rollout, config.gamma, config.gae_lambda)
        if rollout.states is not None:
            length = config.recurrence if config.recurrence > 0 else len(rollout.valid)
            chunks = chunked(rollout, advantages, returns, length)
            return self.update.run_chunks(chunks, self.generator)
        return self.update.run(flatten(rollout, advantages, returns), self.generator)

    def _state(self) -> dict[str, Any]:
        state = self.update.state_dict()
        if self.reward_scaler is not None:
            state["reward_scaler"] = self.reward_scaler.state_dict()
        return state

    def _load_state(self, state: dict[str, Any]) -> None:
        if self.reward_scaler is not None:
            self.reward_scaler.load_state_dict(state["reward_scaler"])
        self.update.load_state_dict(state)
