"""The actor-critic's action distributions, with their gradients written out.

Each gives what acting and the PPO loss read (a draw, log-likelihoods, entropy) and the
gradient of a loss with respect to the distribution's parameters, given the loss's
gradient with respect to each row's log-likelihood and entropy: the chain rule through the
distribution, written once here so that a learner's written-out loss gradient
(``neuroplug_learners.ppo``) needs no graph.
Written out rather than through ``torch.distributions``, whose per-call argument checks
cost more than the maths at these sizes.

Both are batch-aware: the action dimension is the last, and any leading dimensions are
rows: ``(n, actions)`` for one learner, ``(K, b, actions)`` for K population members'
minibatches side by side (each member's Gaussian with its own log-std ``(K, 1, actions)``).

- :class:`Categorical` over logits ``z``: ``d log p(a)/dz = onehot(a) - p`` and
  ``dH/dz = -p (log p + H)``.
- :class:`DiagonalGaussian` with means ``m`` and a state-independent log-std ``s``:
  ``d log p(a)/dm = (a - m) / sigma^2``, ``d log p(a)/ds = (a - m)^2 / sigma^2 - 1`` and
  ``dH/ds = 1``.
"""

from __future__ import annotations

import math

import torch

_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)

EntropyGradient = float | torch.Tensor
"""``dL/dH``: one number for every row, or a tensor of the rows' shape (a member's
entropy coefficient over its count of valid rows)."""


class Categorical:
    """A categorical distribution per row of ``logits`` ``(..., actions)``."""

    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits
        self.log_p = torch.log_softmax(logits, dim=-1)

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        """``(...)`` int64 draws. Gumbel-max: argmax(logits + Gumbel noise) is a draw from
        softmax(logits), with no device sync (torch.multinomial waits for the GPU)."""
        uniform = torch.rand(self.logits.shape, generator=generator, device=self.logits.device)
        gumbel = -torch.log(-torch.log(uniform.clamp_min(1e-20)))
        return (self.logits.float() + gumbel).argmax(dim=-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``(...)`` log-likelihoods of ``actions`` ``(...)``."""
        return self.log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """``(...)``."""
        return -(self.log_p.exp() * self.log_p).sum(-1)

    def gradients(
        self, actions: torch.Tensor, grad_log_prob: torch.Tensor, grad_entropy: EntropyGradient
    ) -> tuple[torch.Tensor, None]:
        """``dL/dlogits`` given ``dL/dlog p(a)`` and ``dL/dH`` per row; no log-std."""
        with torch.no_grad():
            p = self.log_p.exp()
            grad = p * -grad_log_prob.unsqueeze(-1)
            grad.scatter_add_(-1, actions.unsqueeze(-1), grad_log_prob.unsqueeze(-1))
            if isinstance(grad_entropy, torch.Tensor) or grad_entropy:
                entropy = -(p * self.log_p).sum(-1, keepdim=True)
                weight = (
                    grad_entropy.unsqueeze(-1)
                    if isinstance(grad_entropy, torch.Tensor)
                    else grad_entropy
                )
                grad -= weight * p * (self.log_p + entropy)
        return grad, None


class DiagonalGaussian:
    """Independent Gaussians with means ``(..., actions)`` and a log-std per action that
    broadcasts against them (``(actions,)``, or ``(K, 1, actions)``: one per member)."""

    def __init__(self, means: torch.Tensor, log_std: torch.Tensor) -> None:
        self.means = means
        self.log_std = log_std

    def sample(self, generator: torch.Generator) -> torch.Tensor:
        """``(..., actions)`` draws (pre-squash)."""
        noise = torch.randn(self.means.shape, generator=generator, device=self.means.device)
        return self.means + self.log_std.exp() * noise

    def _standardised(self, actions: torch.Tensor) -> torch.Tensor:
        return (actions - self.means) * torch.exp(-self.log_std)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        """``(...)`` log-likelihoods of ``actions`` ``(..., actions)``."""
        z = self._standardised(actions)
        return (-0.5 * z.pow(2) - self.log_std - _HALF_LOG_TWO_PI).sum(-1)

    def entropy(self) -> torch.Tensor:
        """``(...)`` (the same for every row of one log-std)."""
        return (0.5 + _HALF_LOG_TWO_PI + self.log_std).sum(-1).expand(self.means.shape[:-1])

    def gradients(
        self, actions: torch.Tensor, grad_log_prob: torch.Tensor, grad_entropy: EntropyGradient
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(dL/dmeans, dL/dlog_std)`` given ``dL/dlog p(a)`` and ``dL/dH`` per row;
        ``dL/dlog_std`` has the log-std's shape (summed over the rows it serves)."""
        with torch.no_grad():
            z = self._standardised(actions)
            weight = grad_log_prob.unsqueeze(-1)
            grad_means = weight * z * torch.exp(-self.log_std)
            shape = self.log_std.shape
            grad_log_std = (weight * (z.pow(2) - 1.0)).sum_to_size(shape)
            if isinstance(grad_entropy, torch.Tensor):  # dH/ds = 1 for every row
                rows = grad_entropy.expand(self.means.shape[:-1]).unsqueeze(-1)
                grad_log_std = grad_log_std + rows.expand(self.means.shape).sum_to_size(shape)
            else:
                grad_log_std = grad_log_std + grad_entropy * (self.means.numel() // shape.numel())
        return grad_means, grad_log_std
