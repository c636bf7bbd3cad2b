"""What td3 and sac share: the twin critics' written-out regression step agrees with
autograd's."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from neuroplug_learners.twin_critic import TwinCritic


@pytest.mark.parametrize("hidden", [[32, 16], [8]])
def test_the_written_out_critic_step_computes_autograds_loss_and_gradients(hidden):
    generator = torch.Generator().manual_seed(0)
    critic = TwinCritic(5 + 2, hidden, generator)
    observations = torch.randn(24, 5, generator=generator)
    actions = torch.rand(24, 2, generator=generator) * 2 - 1
    targets = torch.randn(24, generator=generator)

    values = critic(observations, actions)
    expected = F.mse_loss(values[0], targets) + F.mse_loss(values[1], targets)
    expected.backward()
    autograd = [tensor.grad.clone() for tensor in critic.parameters()]
    for tensor in critic.parameters():
        tensor.grad = torch.full_like(tensor, 7.0)  # overwritten, not accumulated into

    loss = critic.regression_gradient(observations, actions, targets)
    assert loss == pytest.approx(float(expected.detach()), rel=1e-5)
    for written, reference in zip(critic.parameters(), autograd, strict=True):
        torch.testing.assert_close(written.grad, reference, rtol=1e-4, atol=1e-6)
