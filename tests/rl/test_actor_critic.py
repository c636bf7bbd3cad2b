"""The actor-critic trains the policy network's tensors and deploys them as its flat vector."""

from __future__ import annotations

import pytest
import torch
from neuroplug_learners.ppo import LOSS_STATS, LossGradients

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.errors import ConfigError
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


def _pong_actor_critic(core: str) -> ActorCritic:
    env, network = build_env_and_network(
        EnvConfig(task_id="Pong-v5", kwargs={"img_height": 44, "img_width": 44}),
        NetConfig(core=core, core_size=16),
    )
    return ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)


@pytest.mark.parametrize("core", ["none", "gru"])
def test_a_bfloat16_encoder_trains_under_autocast_and_acts_in_float32(core):
    model = _pong_actor_critic(core)
    assert "bfloat16" in model.train_encoder_in("bfloat16")
    frames = torch.randint(0, 256, (4, 3, *model.env.obs_shape), dtype=torch.uint8)
    starts = torch.zeros(4, 3, dtype=torch.bool)
    states = torch.zeros(3, model.network.state_size)

    def forward():
        if core == "none":
            return model(frames.reshape(12, *model.env.obs_shape))
        outputs, values, _ = model.sequence(frames, states, starts)
        return outputs.reshape(12, -1), values.reshape(12)

    model.eval()
    with torch.no_grad():
        acting = forward()
    model.train()
    trained = forward()
    model.train_encoder_in("float32")
    exact = forward()
    for float32, full in zip(acting, exact, strict=True):  # the layouts differ, not the dtype
        torch.testing.assert_close(float32, full.detach())
    for reduced, full in zip(trained, exact, strict=True):
        assert reduced.dtype == torch.float32  # the heads and the losses stay float32
        assert not torch.equal(reduced, full)  # the encoder did run in bfloat16
        torch.testing.assert_close(reduced, full, rtol=0.05, atol=0.05)
    grads = []
    for precision in ("bfloat16", "float32"):
        model.train_encoder_in(precision)
        model.zero_grad()
        outputs, values = forward()
        (outputs.square().sum() + values.sum()).backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.99


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bfloat16_where_the_cpu_computes_it_natively(monkeypatch, native):
    from neuroplug.rl import actor_critic

    monkeypatch.setattr(actor_critic, "has_native_bfloat16", lambda device: native)
    model = _pong_actor_critic("none")
    note = model.train_encoder_in("auto")
    assert model.encoder_autocast == (torch.bfloat16 if native else None)
    assert ("bfloat16" in note and "auto" in note) if native else note == ""
    # An MLP trained by the written-out pass stays float32 under auto: no refusal.
    env, network = build_env_and_network(EnvConfig(task_id="CartPole-v1"), NetConfig())
    mlp = ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)
    assert mlp.train_encoder_in("auto") == "" and mlp.encoder_autocast is None


def test_a_reduced_precision_encoder_is_refused_where_the_backward_pass_is_written_out():
    env, network = build_env_and_network(EnvConfig(task_id="CartPole-v1"), NetConfig())
    model = ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)
    assert model.written_out
    with pytest.raises(ConfigError, match="algo.encoder_precision.*written-out"):
        model.train_encoder_in("bfloat16")
