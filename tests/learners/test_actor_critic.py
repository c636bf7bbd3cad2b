"""The actor-critic trains the policy network's tensors and deploys them as its flat vector."""

from __future__ import annotations

import torch

from neuroplug.learners import ActorCritic
from neuroplug.testing import learner_context


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
