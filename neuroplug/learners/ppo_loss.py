"""The PPO loss of a minibatch and its gradient with respect to the network's outputs.

For ``n`` transitions with policy outputs ``z`` (logits, or Gaussian means with a learned
log-std ``s``), values ``V``, and the rollout's log-probs, values ``V_old``, advantages
``A`` (standardised per minibatch) and targets ``R``::

    r   = exp(log pi(a|z) - log pi_old(a))
    L   = mean(max(-A r, -A clip(r, 1-eps, 1+eps)))                    policy loss
        + c_v * mean(max((V - R)^2, (V_old + clip(V - V_old, +-eps) - R)^2)) / 2
        - c_e * mean(H(pi(.|z)))

:func:`ppo_loss` is that formula as code, the definition, differentiable by autograd.
Training uses its gradient written out rather than autograd's: it is a dozen elementwise
operations on ``(n, actions)`` tensors, where recording and walking the same loss as a
graph costs more than twice as much on a small network. Its parts:

- ``dL/dr`` is ``-A/n``, except where the clipped term is the larger: there the clip has
  changed ``r`` (it is outside the range) and passes no gradient, so 0; then
  ``dL/dlog pi(a) = r dL/dr``, and ``dL/dH = -c_e/n``;
- the distribution carries those to its parameters
  (:meth:`~neuroplug.learners.distributions.Categorical.gradients`);
- ``dL/dV = (c_v/n) (V - R)``, except where the clipped error is the larger: the clip
  has changed ``V`` there and passes no gradient, so 0.

``tests/learners/test_ppo_loss.py`` checks every case against autograd on :func:`ppo_loss`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from neuroplug.learners.distributions import Categorical, DiagonalGaussian

LOSS_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction")
"""What :func:`ppo_loss_gradients` reports of a minibatch, in order."""


class PPOLossSettings(Protocol):
    """The settings the loss reads (:class:`neuroplug.learners.ppo_update.PPOUpdateConfig`)."""

    clip_coef: float
    clip_value_loss: bool
    value_coef: float
    entropy_coef: float
    normalize_advantages: bool


@dataclass
class LossGradients:
    """The loss's gradient with respect to the network's outputs, and its statistics."""

    outputs: torch.Tensor
    """``(n, out)``: with respect to the logits or means."""
    values: torch.Tensor
    """``(n,)``: with respect to the values."""
    log_std: torch.Tensor | None
    """``(actions,)`` for a Gaussian policy, else None."""
    stats: torch.Tensor | None
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
    """Schulman et al.'s clipped PPO loss of a minibatch (the module docstring's formula),
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
    statistics: bool = True,
) -> LossGradients:
    """The PPO loss's gradients for a minibatch acting by ``policy`` with ``values``;
    ``rows`` is ``(n, 4)``: old log-probs, old values, advantages and targets. The
    statistics are left out (None) unless asked for: an update reports its last epoch's."""
    eps = settings.clip_coef
    old_log_probs, old_values, advantages, returns = rows.unbind(1)
    n = len(values)
    if settings.normalize_advantages and n > 1:
        deviation, mean = torch.std_mean(advantages)
        advantages = (advantages - mean) / (deviation + 1e-8)

    log_ratio = policy.log_prob(actions) - old_log_probs
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - eps, 1 + eps)
    # The clipped term is the larger only where the clip changed r (outside its range),
    # and there the clip passes no gradient; elsewhere the gradient flows through r.
    grad_log_prob = torch.where(clipped > unclipped, 0.0, unclipped * (1.0 / n))
    grad_outputs, grad_log_std = policy.gradients(
        actions, grad_log_prob, -settings.entropy_coef / n
    )

    value_error = (values - returns).pow(2)
    grad_values = (values - returns) * (settings.value_coef / n)
    if settings.clip_value_loss:
        # clip(V, V_old +- eps): V itself inside the range, where the error is unchanged.
        clipped_values = torch.clamp(values, old_values - eps, old_values + eps)
        clipped_error = (clipped_values - returns).pow(2)
        grad_values = torch.where(clipped_error > value_error, 0.0, grad_values)
        value_error = torch.maximum(value_error, clipped_error)

    stats = None
    if statistics:
        stats = torch.stack(
            [
                torch.maximum(unclipped, clipped).mean(),
                0.5 * value_error.mean(),
                policy.entropy().mean(),
                ((ratio - 1) - log_ratio).mean(),
                ((ratio - 1.0).abs() > eps).float().mean(),
            ]
        )
    return LossGradients(grad_outputs, grad_values, grad_log_std, stats)
