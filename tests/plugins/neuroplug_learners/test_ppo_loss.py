"""The written-out PPO gradient equals autograd's on the paper's loss, in every case."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from neuroplug_learners.ppo import LOSS_STATS, ppo_loss, ppo_loss_gradients

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
    policy = Categorical(outputs) if discrete else DiagonalGaussian(outputs, log_std)
    written = ppo_loss_gradients(settings, policy, values, actions, rows)

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
