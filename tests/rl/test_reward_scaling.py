"""Rewards scaled by the running std of each env's discounted return: the definition on a
known sequence, episode ends and auto-reset steps, the clip, and an exact resume."""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.rl.reward_scaling import CLIP, EPSILON, RewardScaler


def reference(rewards, valid, ended, gamma):
    """Step by step from the definition: every valid env's return joins a list; the
    variance pools gymnasium's prior (count 1e-4, mean 0, var 1) with the list."""
    returns, seen, out = np.zeros(rewards.shape[1]), [], np.zeros_like(rewards)
    for step in range(len(rewards)):
        for env in range(rewards.shape[1]):
            if valid[step, env]:
                returns[env] = returns[env] * gamma + rewards[step, env]
                seen.append(returns[env])
        values, prior = np.array(seen), 1e-4
        mean = values.sum() / (prior + len(values))
        m2 = prior * (1.0 + mean**2) + ((values - mean) ** 2).sum()
        out[step] = rewards[step] / np.sqrt(m2 / (prior + len(values)) + EPSILON)
        returns[ended[step] & valid[step]] = 0.0
    return np.clip(out, -CLIP, CLIP)


def _rollout(steps=40, envs=3, seed=0):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(1.0, 2.0, size=(steps, envs))
    ended = rng.random((steps, envs)) < 0.1
    valid = ~np.concatenate((np.zeros((1, envs), bool), ended[:-1]))  # the step after an end
    rewards[~valid] = 0.0
    return rewards, valid, ended


def test_scaled_rewards_follow_the_definition():
    rewards, valid, ended = _rollout()
    scaler = RewardScaler(3, gamma=0.99)
    scaled = scaler.scale(torch.tensor(rewards), torch.tensor(valid), torch.tensor(ended))
    np.testing.assert_allclose(scaled.numpy(), reference(rewards, valid, ended, 0.99), rtol=1e-12)


def test_a_reward_far_beyond_the_returns_seen_is_clipped_keeping_its_sign():
    # 2,000 small returns, then a reward whose scaled value is about 30 std: clipped to 10.
    rewards = np.concatenate((np.full((2000, 1), 1e-3), [[1e3]], [[-1e3]]))
    flags = np.zeros_like(rewards, dtype=bool)
    scaled = (
        RewardScaler(1, 0.0)
        .scale(torch.tensor(rewards), torch.tensor(~flags), torch.tensor(flags))
        .numpy()
    )
    assert scaled[-2, 0] == CLIP and scaled[-1, 0] == -CLIP
    assert 0 < scaled[0, 0] < CLIP


def test_a_resumed_scaler_scales_as_the_uninterrupted_one():
    rewards, valid, ended = (torch.tensor(part) for part in _rollout(steps=60))
    straight = RewardScaler(3, 0.9).scale(rewards, valid, ended)
    first = RewardScaler(3, 0.9)
    head = first.scale(rewards[:25], valid[:25], ended[:25])
    second = RewardScaler(3, 0.9)
    second.load_state_dict(first.state_dict())
    tail = second.scale(rewards[25:], valid[25:], ended[25:])
    assert torch.equal(torch.cat((head, tail)), straight)


def test_columns_past_its_envs_are_scaled_alike_and_not_counted():
    # A member's games in another member's envs (guest columns) follow its own envs' scale.
    rewards, valid, ended = (torch.tensor(part) for part in _rollout(envs=5))
    own = RewardScaler(3, 0.99)
    alone = own.scale(rewards[:, :3], valid[:, :3], ended[:, :3])
    wider = RewardScaler(3, 0.99)
    scaled = wider.scale(rewards, valid, ended)
    torch.testing.assert_close(scaled[:, :3], alone, rtol=0, atol=0)
    assert wider.state_dict().keys() == own.state_dict().keys()
    assert (wider.count, wider.var) == (own.count, own.var)
    std = np.sqrt(own.var + EPSILON)  # the guest columns' last step: the last variance
    np.testing.assert_allclose(scaled[-1, 3:].numpy(), np.clip(rewards[-1, 3:] / std, -CLIP, CLIP))
