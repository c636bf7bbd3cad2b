"""The actor-critic trains the policy network's tensors and deploys them as its flat vector."""

from __future__ import annotations

import pytest
import torch
from neuroplug_learners.ppo import LOSS_STATS, LossGradients

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.rl import ActorCritic
from neuroplug.testing import learner_context
from neuroplug.training.components import build_env_and_network


def test_the_deployed_vector_is_the_actor_and_follows_its_training():
    context = learner_context(seed=3)
    model = ActorCritic.for_learner(context)
    assert torch.equal(model.policy_vector(), context.initial_params.float())
    observations = torch.rand(5, *context.env.obs_shape)
    outputs, values = model(observations)
    deployed = context.network.forward_single(model.policy_vector(), observations)
    assert torch.equal(outputs, deployed)
    assert values.shape == (5,)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    (outputs.square().sum() + values.sum()).backward()
    optimizer.step()
    moved = model.policy_vector()
    assert not torch.equal(moved, context.initial_params.float())
    assert torch.allclose(
        model(observations)[0], context.network.forward_single(moved, observations)
    )


@pytest.mark.parametrize("task", ["CartPole-v1", "Pendulum-v1"])
def test_the_written_out_gradients_are_autograds(task):
    """The MLP actor-critic's gradient step skips autograd; it must not change the maths."""
    env, network = build_env_and_network(EnvConfig(task_id=task), NetConfig(hidden_sizes=[8, 8]))
    model = ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)
    observations = torch.rand(6, *env.obs_shape)
    generator = torch.Generator().manual_seed(1)
    outputs, values, backward = model.forward_for_gradients(observations)
    reference_outputs, reference_values = model(observations)
    assert torch.equal(outputs, reference_outputs.detach())
    assert torch.equal(values, reference_values.detach())
    grads = LossGradients(
        torch.randn(outputs.shape, generator=generator),
        torch.randn(values.shape, generator=generator),
        None if env.discrete else torch.randn(env.num_actions, generator=generator),
        torch.zeros(len(LOSS_STATS)),
    )
    backward(grads)
    written = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    torch.autograd.backward((reference_outputs, reference_values), (grads.outputs, grads.values))
    for name, parameter in model.named_parameters():
        expected = parameter.grad
        if name == "log_std":
            expected = grads.log_std
        torch.testing.assert_close(written[name], expected, msg=name)


def test_a_recurrent_actor_critic_re_runs_its_core_as_it_acted():
    # The update's sequence() over a chunk must give what step() gave while acting: the
    # same outputs and values, with the state zeroed where an episode begins.
    env, network = build_env_and_network(
        EnvConfig(task_id="CartPole-v1"), NetConfig(hidden_sizes=[16], core="gru", core_size=8)
    )
    model = ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)
    assert model.shared_trunk and not model.written_out  # the critic reads the core's state
    generator = torch.Generator().manual_seed(1)
    steps, envs = 6, 3
    observations = torch.randn(steps, envs, 4, generator=generator)
    starts = torch.zeros(steps, envs, dtype=torch.bool)
    starts[3, 1] = True
    initial = torch.randn(envs, 8, generator=generator)
    with torch.no_grad():
        outputs, values, last = model.sequence(observations, initial, starts)
        state = initial
        for step in range(steps):
            state = torch.where(starts[step].unsqueeze(1), 0.0, state)
            acted, valued, state = model.step(observations[step], state)
            torch.testing.assert_close(outputs[step], acted)
            torch.testing.assert_close(values[step], valued)
        torch.testing.assert_close(last, state)
