"""algo=sac: its squashed Gaussian's likelihood, the learner contract on Pendulum, learning
it with the temperature tuned, and an exact resume with its replay buffer."""

from __future__ import annotations

import math

import pytest
import torch
from neuroplug_learners.sac import SAC, squash_log_std, squashed_log_prob
from neuroplug_learners.sac_config import SACConfig

from neuroplug.app import run_job
from neuroplug.testing import check_learner_contract
from neuroplug.testing.resume_check import check_learner_resume

SMALL = [
    "algo=sac",
    "env=pendulum",
    "net.hidden_sizes=[64,64]",
    "algo.critic_hidden=[64,64]",
    "algo.batch_size=64",
]


def test_the_squashed_likelihood_is_the_change_of_variables_of_the_gaussian():
    mean, log_std = torch.tensor([[0.3, -0.2]]), torch.tensor([[-0.5, 0.1]])
    noise = torch.tensor([[0.7, -1.1]])
    u = mean + log_std.exp() * noise
    expected = torch.distributions.Normal(mean, log_std.exp()).log_prob(u)
    expected = (expected - torch.log(1 - torch.tanh(u) ** 2 + 1e-6)).sum(1)
    torch.testing.assert_close(squashed_log_prob(u, noise, log_std), expected)
    bounded = squash_log_std(torch.tensor([-50.0, 0.0, 50.0]), -5.0, 2.0)
    torch.testing.assert_close(bounded, torch.tensor([-5.0, -1.5, 2.0]))
    assert math.isclose(float(squash_log_std(torch.tensor(0.0), -5, 2)), -1.5)


def test_sac_honours_the_learner_contract():
    config = SACConfig(
        name="sac", learning_starts=64, batch_size=32, buffer_size=2000, critic_hidden=[32]
    )
    check_learner_contract(SAC, config, task="Pendulum-v1")


def test_sac_learns_pendulum_and_tunes_its_temperature(compose, tmp_path):
    # 2026-11-27 (Zen 5 EPYC), seed 0, 64-64 networks, evaluated every 2k steps: td3
    # -1464, -1239, -915, -184, -152; sac -1185, -245, -157, -172, -139.
    overrides = [*SMALL, "algo.learning_starts=500", "algo.segment_steps=2000"]
    overrides += ["run.max_frames=6000", "run.eval_interval=0", "logger=none"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["eval_return_mean"] > -400, summary  # random: about -1200


def test_sac_resumes_with_its_replay_buffer(compose, tmp_path):
    overrides = [*SMALL, "algo.learning_starts=200", "algo.segment_steps=400"]
    left, _ = check_learner_resume(compose, overrides, tmp_path, segments=3, stop_at=1)
    learner = left["algorithm"]["learner"]
    # 1,200 steps less the resets after each ended episode (not transitions).
    assert learner["updates"] > 0 and 1150 < learner["replay"]["size"] <= 1200


@pytest.mark.parametrize("log_std_from", ["trunk", "network"])
def test_the_written_out_actor_step_computes_autograds_loss_and_gradients(log_std_from):
    from neuroplug_learners.twin_critic import critic_of_actions

    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context(task="Pendulum-v1")
    config, _ = resolve(
        SACConfig(name="sac", critic_hidden=[32, 16], alpha_init=0.3, log_std_from=log_std_from),
        context.env,
    )
    learner = SAC(config, context)
    assert learner._written_out  # the 16-unit MLPs
    model = learner.model
    with torch.no_grad():  # actions away from the squash's flat ends, log-stds mid-range
        model.log_std.normal_(0, 0.3, generator=torch.Generator().manual_seed(1))
    observations = torch.randn(24, 3, generator=torch.Generator().manual_seed(0))
    state = learner.generator.get_state()

    actions, log_prob = model.sample(observations, learner.generator)
    value = critic_of_actions(model.critic, observations, actions).min(dim=0).values
    loss = (learner.alpha * log_prob - value).mean()
    loss.backward()
    expected = [model.actor.grad.clone(), model.log_std.grad.clone()]
    model.actor.grad.fill_(7.0)  # overwritten, not accumulated into
    model.log_std.grad.fill_(7.0)

    learner.generator.set_state(state)  # the same noise
    written, written_log_prob = learner._written_out_actor_gradient(observations)
    assert written == pytest.approx(float(loss.detach()), rel=1e-5)
    torch.testing.assert_close(written_log_prob, log_prob.detach())
    for parameter, reference in zip((model.actor, model.log_std), expected, strict=True):
        # Float32 sums in another order: 3e-6 off at a largest gradient of 0.17.
        torch.testing.assert_close(parameter.grad, reference, rtol=1e-4, atol=1e-5)


def _learner(seed: int = 0, network=None, **settings) -> SAC:
    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context(seed=seed, task="Pendulum-v1", network=network)
    config, _ = resolve(SACConfig(name="sac", critic_hidden=[16], **settings), context.env)
    return SAC(config, context)


def test_the_log_std_is_a_linear_head_on_the_actors_last_hidden_features():
    learner = _learner()
    model = learner.model
    assert model.log_std_network is None and model.log_std.shape == (16 + 1,)  # |A| = 1
    observations = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    mean, log_std = model.distribution(observations)
    with torch.no_grad():
        features = model.network.features(model.actor, observations)
        raw = features @ model.log_std[:16].view(1, 16).T + model.log_std[16:]
        torch.testing.assert_close(mean, model.network.forward_single(model.actor, observations))
    torch.testing.assert_close(log_std, squash_log_std(raw, -5.0, 2.0))
    separate = _learner(log_std_from="network").model  # a second 3-16-1 network
    assert separate.log_std_network is not None and separate.log_std.shape == (3 * 16 + 16 + 17,)


@pytest.mark.parametrize("log_std_from", ["trunk", "network"])
def test_a_population_acts_as_each_members_own_gaussian(log_std_from):
    members = [_learner(seed, log_std_from=log_std_from) for seed in (0, 1)]
    for member in members:  # past learning_starts: no uniform actions
        member.env_steps = member.config.learning_starts
    acting = SAC.population_acting(members, envs_per_member=3)
    acting.refresh()
    observations = torch.randn(6, 3, generator=torch.Generator().manual_seed(2))
    acted = acting.act(observations, slice(0, 6), None, torch.Generator().manual_seed(3))
    with torch.no_grad():
        parts = [
            m.model.distribution(observations[3 * k : 3 * k + 3]) for k, m in enumerate(members)
        ]
    mean = torch.cat([part[0] for part in parts])
    log_std = torch.cat([part[1] for part in parts])
    noise = torch.randn(mean.shape, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(acted.actions, mean + log_std.exp() * noise)


def test_a_whole_policy_module_needs_the_log_std_network():
    from residual_net import PlainMLP

    from neuroplug.errors import ConfigError
    from neuroplug.nets.module_network import ModuleNetwork

    def whole_policy(env):
        return ModuleNetwork(PlainMLP, env.obs_shape, env.num_actions, {"width": 8})

    with pytest.raises(ConfigError, match=r"algo\.log_std_from.*whole policy.*network"):
        _learner(network=whole_policy)
    assert _learner(network=whole_policy, log_std_from="network").model.log_std_network


def test_the_temperature_starts_at_alpha_init_when_tuned_and_stays_at_alpha_otherwise():
    # CleanRL's log_alpha = 0 and SB3's ent_coef="auto": a tuned temperature starts at 1.
    assert math.isclose(_learner().alpha, 1.0)
    assert math.isclose(_learner(alpha_init=0.5).alpha, 0.5, rel_tol=1e-6)
    fixed = _learner(autotune=False, alpha=0.3)
    assert math.isclose(fixed.alpha, 0.3) and math.isclose(
        float(fixed.model.log_alpha.detach().exp()), 0.3, rel_tol=1e-6
    )


def test_alpha_init_is_checked_before_anything_is_built():
    from neuroplug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"algo\.alpha_init.*got 0.*> 0"):
        SACConfig(name="sac", alpha_init=0.0).check()
    # alpha was the tuned start before alpha_init: set with autotune, it is refused.
    with pytest.raises(ConfigError, match=r"algo\.alpha: 0.5 .*unused.*algo\.alpha_init="):
        SACConfig(name="sac", alpha=0.5).check()


def test_log_std_from_is_checked_before_anything_is_built():
    from neuroplug.errors import ConfigError

    with pytest.raises(ConfigError, match=r"algo\.log_std_from.*'head'.*trunk or network"):
        SACConfig(name="sac", log_std_from="head").check()


def test_a_module_encoder_carries_both_heads_and_honours_the_contract():
    from residual_net import ResidualMLP

    from neuroplug.nets.module_network import ModuleNetwork

    def encoder(env):  # a residual encoder of 8 features: the trunk, autograd's gradients
        return ModuleNetwork(ResidualMLP, env.obs_shape, env.num_actions, {"width": 8}, features=8)

    learner = _learner(network=encoder)
    assert learner.model.trunk_head and not learner._written_out
    assert learner.model.log_std.shape == (8 + 1,)
    config = SACConfig(
        name="sac", learning_starts=64, batch_size=32, buffer_size=2000, critic_hidden=[16]
    )
    check_learner_contract(SAC, config, task="Pendulum-v1", network=encoder)
