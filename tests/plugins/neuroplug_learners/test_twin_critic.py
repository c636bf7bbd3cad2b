"""What td3 and sac share: the twin critics' written-out regression step agrees with
autograd's; acting before learning starts skips the policy but not its random numbers."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from neuroplug_learners.twin_critic import TwinCritic, uniform_actions, with_random_actions


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


def test_uniform_actions_are_the_policys_actions_replaced_drawing_the_same_numbers():
    skipping, acting = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    got = uniform_actions(3, 2, skipping, torch.device("cpu"))
    # What td3's and sac's acting did with the forward: noise on the policy's actions, then
    # every row replaced while its env explores.
    noisy = torch.full((3, 2), 0.3) + 0.1 * torch.randn((3, 2), generator=acting)
    want = with_random_actions(noisy, torch.ones(3, dtype=torch.bool), acting)
    assert torch.equal(got, want)
    assert (got.tanh().abs() < 1).all() and got.std() > 0.1
    # The streams go on alike: a run's later draws (and so the run) are unchanged.
    assert torch.equal(torch.rand(4, generator=skipping), torch.rand(4, generator=acting))
