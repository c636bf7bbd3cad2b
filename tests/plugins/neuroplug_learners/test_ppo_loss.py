"""The written-out PPO gradient equals autograd's on the paper's loss, in every case: for
a lone learner (a population of one) and for members side by side, each with its own
valid rows and coefficients."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from neuroplug_learners.ppo import LOSS_STATS, ppo_loss, ppo_loss_gradients
from neuroplug_learners.ppo_stacked import MemberSettings

from neuroplug.rl.distributions import Categorical, DiagonalGaussian


@dataclass
class _Settings:
    clip_coef: float = 0.2
    clip_value_loss: bool = True
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    normalize_advantages: bool = True


def _minibatch(discrete: bool, n: int = 64, actions: int = 3):
    generator = torch.Generator().manual_seed(5)

    def normal(*shape, scale=1.0):
        return scale * torch.randn(*shape, generator=generator, dtype=torch.float64)

    outputs = normal(n, actions)
    log_std = None if discrete else normal(actions, scale=0.3)
    if discrete:
        chosen = torch.randint(0, actions, (n,), generator=generator)
        current = torch.log_softmax(outputs, 1).gather(1, chosen.unsqueeze(1)).squeeze(1)
    else:
        chosen = outputs + normal(n, actions)
        current = torch.distributions.Normal(outputs, log_std.exp()).log_prob(chosen).sum(1)
    # Old log-probs spread so that ratios fall inside and on both sides of the clip range,
    # and old values so that both value errors win sometimes.
    old_log_probs = current + normal(n, scale=0.3)
    values = normal(n)
    rows = torch.stack([old_log_probs, values + normal(n, scale=0.3), normal(n), normal(n)], 1)
    return outputs, log_std, values, chosen, rows


@dataclass
class LossParts:
    outputs: torch.Tensor
    values: torch.Tensor
    log_std: torch.Tensor | None
    stats: torch.Tensor


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("clip_value_loss", [True, False])
@pytest.mark.parametrize("normalize_advantages", [True, False])
@pytest.mark.parametrize("entropy_coef", [0.0, 0.01])
def test_the_written_out_gradient_is_autograds(
    discrete, clip_value_loss, normalize_advantages, entropy_coef
):
    settings = _Settings(
        clip_value_loss=clip_value_loss,
        normalize_advantages=normalize_advantages,
        entropy_coef=entropy_coef,
    )
    outputs, log_std, values, actions, rows = _minibatch(discrete)
    policy = Categorical(outputs[None]) if discrete else DiagonalGaussian(outputs[None], log_std)
    stacked = ppo_loss_gradients(settings, policy, values[None], actions[None], rows[None])
    written = LossParts(
        stacked.outputs[0],
        stacked.values[0],
        stacked.log_std,
        stacked.stats[0],
    )

    leaves = [outputs.clone().requires_grad_(), values.clone().requires_grad_()]
    if not discrete:
        leaves.append(log_std.clone().requires_grad_())
    loss = ppo_loss(settings, leaves[0], None if discrete else leaves[2], leaves[1], actions, rows)
    loss.backward()
    torch.testing.assert_close(written.outputs, leaves[0].grad)
    torch.testing.assert_close(written.values, leaves[1].grad)
    if discrete:
        assert written.log_std is None
    else:
        torch.testing.assert_close(written.log_std, leaves[2].grad)
    stats = dict(zip(LOSS_STATS, written.stats.tolist(), strict=True))
    entropy_term = -entropy_coef * stats["entropy"]
    total = stats["policy_loss"] + settings.value_coef * stats["value_loss"] + entropy_term
    assert math.isclose(total, loss.item(), rel_tol=1e-9, abs_tol=1e-12)
    assert 0 < stats["clip_fraction"] < 1  # both sides of the clip were exercised


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("normalize_advantages", [True, False])
def test_members_side_by_side_each_get_their_own_loss_gradient(discrete, normalize_advantages):
    """Three members' minibatches in one call, each with some rows masked out (EnvPool's
    auto-resets) and its own coefficients: each member's gradient is autograd's of its own
    loss over its valid rows (the masked rows get none)."""
    coefficients = [(0.2, 0.5, 0.01), (0.1, 1.0, 0.0), (0.3, 0.25, 0.05)]
    parts = [_minibatch(discrete, n=48) for _ in coefficients]
    outputs, log_std, values, actions, rows = (
        None if parts[0][i] is None else torch.stack([part[i] for part in parts]) for i in range(5)
    )
    # Different draws per member: perturb each member's rows so they are not copies.
    generator = torch.Generator().manual_seed(9)
    outputs = outputs + torch.randn(outputs.shape, generator=generator, dtype=outputs.dtype)
    mask = torch.ones(3, 48, dtype=torch.float64)
    mask[0, [3, 17, 40]] = 0.0
    mask[2, 5:11] = 0.0

    def column(index: int) -> torch.Tensor:
        return torch.tensor([[c[index]] for c in coefficients], dtype=torch.float64)

    settings = MemberSettings(column(0), True, column(1), column(2), normalize_advantages)
    policy = Categorical(outputs) if discrete else DiagonalGaussian(outputs, log_std.unsqueeze(1))
    written = ppo_loss_gradients(settings, policy, values, actions, rows, mask)

    for k, (clip, value_coef, entropy_coef) in enumerate(coefficients):
        keep = mask[k] > 0
        member = _Settings(clip, True, value_coef, entropy_coef, normalize_advantages)
        leaves = [outputs[k].clone().requires_grad_(), values[k].clone().requires_grad_()]
        if not discrete:
            leaves.append(log_std[k].clone().requires_grad_())
        loss = ppo_loss(
            member,
            leaves[0][keep],
            None if discrete else leaves[2],
            leaves[1][keep],
            actions[k][keep],
            rows[k][keep],
        )
        loss.backward()
        torch.testing.assert_close(written.outputs[k], leaves[0].grad)
        torch.testing.assert_close(written.values[k], leaves[1].grad)
        assert not written.outputs[k][~keep].any()  # masked rows learn nothing
        if not discrete:
            torch.testing.assert_close(written.log_std[k, 0], leaves[2].grad)
        stats = dict(zip(LOSS_STATS, written.stats[k].tolist(), strict=True))
        total = (
            stats["policy_loss"]
            + value_coef * stats["value_loss"]
            - entropy_coef * stats["entropy"]
        )
        assert math.isclose(total, loss.item(), rel_tol=1e-9, abs_tol=1e-12)
