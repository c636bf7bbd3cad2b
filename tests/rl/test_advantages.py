"""GAE and V-trace on hand-made rollouts: episode ends, truncation, auto-reset steps."""

from __future__ import annotations

import torch

from neuroplug.rl.advantages import gae, vtrace


def _flags(length: int, envs: int = 1):
    return (
        torch.zeros(length, envs, dtype=torch.bool),
        torch.zeros(length, envs, dtype=torch.bool),
        torch.ones(length, envs, dtype=torch.bool),
    )


def test_gae_with_lambda_one_is_the_discounted_return_minus_the_value():
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    values = torch.tensor([[0.5], [0.2], [0.1]])
    next_values = torch.tensor([4.0])
    terminated, ended, valid = _flags(3)
    advantages, returns = gae(rewards, values, next_values, terminated, ended, valid, 0.9, 1.0)
    expected = torch.tensor(
        [
            1 + 0.9 * 2 + 0.81 * 3 + 0.729 * 4,
            2 + 0.9 * 3 + 0.81 * 4,
            3 + 0.9 * 4,
        ]
    ).unsqueeze(1)
    torch.testing.assert_close(returns, expected)
    torch.testing.assert_close(advantages, expected - values)


def test_a_terminal_step_stops_bootstrapping_and_the_reset_step_is_left_out():
    rewards = torch.tensor([[1.0], [1.0], [0.0], [1.0]])
    values = torch.tensor([[0.3], [0.6], [9.0], [0.2]])
    next_values = torch.tensor([0.7])
    terminated, ended, valid = _flags(4)
    terminated[1] = ended[1] = True  # the episode ends after step 1 ...
    valid[2] = False  # ... so step 2 is EnvPool's reset, its action ignored
    advantages, _ = gae(rewards, values, next_values, terminated, ended, valid, 0.5, 1.0)
    assert advantages[2, 0] == 0
    torch.testing.assert_close(advantages[1, 0], torch.tensor(1.0 - 0.6))
    torch.testing.assert_close(advantages[0, 0], torch.tensor(1.0 + 0.5 * 1.0 - 0.3))
    torch.testing.assert_close(advantages[3, 0], torch.tensor(1.0 + 0.5 * 0.7 - 0.2))


def test_a_truncated_episode_bootstraps_from_its_last_observation():
    rewards = torch.tensor([[1.0], [0.0]])
    values = torch.tensor([[0.3], [5.0]])  # row 1: the reset step, valued on the last obs
    terminated, ended, valid = _flags(2)
    ended[0] = True
    valid[1] = False
    advantages, _ = gae(rewards, values, torch.tensor([0.0]), terminated, ended, valid, 0.9, 0.95)
    torch.testing.assert_close(advantages[0, 0], torch.tensor(1.0 + 0.9 * 5.0 - 0.3))


def test_vtrace_on_policy_gives_n_step_returns():
    generator = torch.Generator().manual_seed(0)
    length, envs = 6, 3
    rewards = torch.randn(length, envs, generator=generator)
    values = torch.randn(length, envs, generator=generator)
    next_values = torch.randn(envs, generator=generator)
    log_probs = torch.randn(length, envs, generator=generator)
    terminated, ended, valid = _flags(length, envs)
    advantages, targets = vtrace(
        log_probs, log_probs, rewards, values, next_values, terminated, ended, valid, 0.9
    )
    # On-policy with rho = c = 1: v_s is the n-step return to the rollout's end.
    _, returns = gae(rewards, values, next_values, terminated, ended, valid, 0.9, 1.0)
    torch.testing.assert_close(targets, returns)
    following = torch.cat((returns[1:], next_values.unsqueeze(0)))
    torch.testing.assert_close(advantages, rewards + 0.9 * following - values)


def test_vtrace_truncates_the_importance_weights():
    rewards = torch.tensor([[1.0]])
    values = torch.tensor([[0.0]])
    terminated, ended, valid = _flags(1)
    behavior, target = torch.tensor([[0.0]]), torch.tensor([[2.0]])  # pi/mu = e^2 > 1
    advantages, targets = vtrace(
        behavior, target, rewards, values, torch.tensor([0.0]), terminated, ended, valid, 0.9
    )
    torch.testing.assert_close(targets, torch.tensor([[1.0]]))  # rho clipped to 1
    torch.testing.assert_close(advantages, torch.tensor([[1.0]]))
