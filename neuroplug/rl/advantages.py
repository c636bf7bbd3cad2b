"""Advantage estimators over time-major rollouts: GAE and V-trace.

Both take the sampler's flags: ``terminated`` (no bootstrap past this step), ``ended``
(the learner's episode ended here: terminated or truncated, so nothing flows back past
it) and ``valid`` (False for the auto-reset steps, whose actions the env ignored; they get
no advantage and stop the recursion). A truncated episode bootstraps from the value of its
last observation, which the sampler evaluated on the following (reset) step.
"""

from __future__ import annotations

import torch

from neuroplug.rl.sampler import Rollout


def _next_values(values: torch.Tensor, next_values: torch.Tensor) -> torch.Tensor:
    """``V(s_{t+1})`` for every row: the values shifted by one, then the bootstrap."""
    return torch.cat((values[1:], next_values.unsqueeze(0)))


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    ended: torch.Tensor,
    valid: torch.Tensor,
    gamma: float | torch.Tensor,
    lam: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation (Schulman et al. 2016): ``(advantages, returns)``.
    ``gamma`` and ``lam`` are numbers, or one per env ``(N,)`` (a population's members each
    with their own)."""
    following = _next_values(values, next_values)
    deltas = rewards + gamma * following * (~terminated) - values
    carry = (~ended).float() * gamma * lam
    advantages = torch.zeros_like(values)
    running = torch.zeros_like(next_values)
    for step in reversed(range(len(rewards))):
        running = (deltas[step] + carry[step] * running) * valid[step]
        advantages[step] = running
    return advantages, advantages + values


def rollout_gae(
    rollout: Rollout, gamma: float | torch.Tensor, lam: float | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`gae` on a sampler's rollout, with its own (behavior) values."""
    return gae(
        rollout.rewards,
        rollout.values,
        rollout.next_values,
        rollout.terminated,
        rollout.ended,
        rollout.valid,
        gamma,
        lam,
    )


def vtrace(
    behavior_log_probs: torch.Tensor,
    target_log_probs: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    ended: torch.Tensor,
    valid: torch.Tensor,
    gamma: float,
    rho_clip: float = 1.0,
    c_clip: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """V-trace (Espeholt et al. 2018, IMPALA): ``(policy advantages, value targets v_s)``, in
    the order :func:`gae` returns its own.

    ``v_s = V(s) + sum_t gamma^(t-s) (prod_{i<t} c_i) rho_t delta_t`` with truncated
    importance weights ``rho_t = min(rho_clip, pi/mu)``, ``c_i = min(c_clip, pi/mu)``; the
    policy-gradient advantage is ``rho_s (r_s + gamma v_{s+1} - V(s))``. With on-policy data
    and ``rho = c = 1`` the targets are n-step returns up to the rollout's end.
    """
    ratios = torch.exp(target_log_probs - behavior_log_probs)
    rhos = torch.clamp(ratios, max=rho_clip) * valid
    cs = torch.clamp(ratios, max=c_clip) * valid
    following = _next_values(values, next_values)
    bootstrap = (~terminated).float()
    deltas = rhos * (rewards + gamma * following * bootstrap - values)
    carry = (~ended).float() * gamma
    corrections = torch.zeros_like(values)
    running = torch.zeros_like(next_values)
    for step in reversed(range(len(rewards))):
        running = deltas[step] + carry[step] * cs[step] * running
        corrections[step] = running
    targets = values + corrections
    # v_{s+1}: the next row's target, the bootstrap value past the rollout or an episode's end.
    next_targets = torch.cat((targets[1:], next_values.unsqueeze(0)))
    next_targets = torch.where(ended, following, next_targets)
    advantages = rhos * (rewards + gamma * next_targets * bootstrap - values)
    return advantages, targets
