"""A loaded policy acts as the run's policy does: for every network kind, on raw
observations, with the normalizer, the observation mask, recurrent states and virtual
batch norm inside; bad observations are refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from policy_files import KINDS, policy_file

from neuroplug.deploy.export import example_observations
from neuroplug.deploy.loading import load_policy
from neuroplug.deploy.policy_module import PolicyInputError
from neuroplug.population.members import Population
from neuroplug.tools.watch import build_player, load_watched


def engine_actions(path, observations: torch.Tensor, state: torch.Tensor | None, params=None):
    """What the run's own policy and backend (the evaluation engine's) do on ``observations``
    with the file's parameters (or ``params``)."""
    loaded = load_watched(path)
    env, policy, backend = build_player(loaded)
    params = loaded.params if params is None else params
    backend.load(Population.dense(params.unsqueeze(0)))
    inputs = policy.prepare(observations.numpy(), backend.device)
    members = torch.zeros(len(inputs), dtype=torch.long)
    if state is None:
        return policy.actions(backend.forward(members, inputs)), None
    outputs, new_state = backend.forward_with_state(members, inputs, state)
    return policy.actions(outputs), new_state


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_loaded_policy_acts_as_the_runs_policy(compose, tmp_path, kind):
    path = policy_file(compose, tmp_path, KINDS[kind])
    policy = load_policy(path)
    assert isinstance(policy, torch.nn.Module)
    observations = example_observations(policy, 6, seed=4)
    if kind == "masked":  # the network sees what is left after the mask
        observations = observations[:, [0, 1]]
    state = None
    if policy.recurrent:
        state = torch.randn((6, policy.state_size), generator=torch.Generator().manual_seed(5))
    expected, expected_state = engine_actions(path, observations, state)
    with torch.no_grad():
        got = policy(observations, state) if policy.recurrent else policy(observations)
    if policy.recurrent:
        got, got_state = got
        torch.testing.assert_close(got_state, expected_state, atol=1e-5, rtol=1e-5)
    if policy.discrete:
        assert np.array_equal(got.numpy(), expected)
    else:
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)


def test_a_masked_policy_takes_the_tasks_full_observation_too(compose, tmp_path):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["masked"]))
    full = torch.randn(5, 3)  # Pendulum's cos, sin, velocity; the run dropped the velocity
    assert torch.equal(policy(full), policy(full[:, :2]))


def test_one_observation_gives_one_action(compose, tmp_path):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["mlp continuous"]))
    batch = torch.randn(4, 3)
    assert policy(batch[0]).shape == (1,)
    assert torch.equal(policy(batch[0]), policy(batch)[0])
    assert torch.equal(policy(batch[0].numpy()), policy(batch)[0])  # numpy arrays too
    assert policy(batch).dtype == torch.float32 and policy(batch).abs().max() <= 2.0


def test_a_recurrent_policy_starts_from_zeros(compose, tmp_path):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["gru core"]))
    observations = torch.randn(3, 4)
    actions, state = policy(observations)
    again, same_state = policy(observations, policy.initial_state(3))
    assert torch.equal(actions, again) and torch.equal(state, same_state)
    assert state.shape == (3, 4) and not torch.equal(state, torch.zeros(3, 4))


@pytest.mark.parametrize(
    "observations, said",
    [
        (torch.zeros(2, 5), r"observations of shape \(2, 5\).*CartPole-v1.*shape \(4,\)"),
        (torch.zeros(2, 3, 4), r"observations of shape \(2, 3, 4\)"),
    ],
)
def test_observations_of_the_wrong_shape_are_refused(compose, tmp_path, observations, said):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["mlp"]))
    with pytest.raises(PolicyInputError, match=said):
        policy(observations)


def test_a_state_of_the_wrong_shape_is_refused(compose, tmp_path):
    policy = load_policy(policy_file(compose, tmp_path, KINDS["gru core"]))
    with pytest.raises(PolicyInputError, match=r"state of shape \(2, 3\).*\(batch, 4\)"):
        policy(torch.zeros(2, 4), torch.zeros(2, 3))


def test_the_policy_goes_to_the_device_asked_for(compose, tmp_path):
    path = policy_file(compose, tmp_path, KINDS["mlp"])
    policy = load_policy(path, device="cpu", which="best")
    assert all(tensor.device.type == "cpu" for tensor in policy.state_dict().values())
    assert not policy.training
