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


def test_the_written_out_actor_step_computes_autograds_loss_and_gradients():
    from neuroplug_learners.off_policy import critic_of_actions

    from neuroplug.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context(task="Pendulum-v1")
    config, _ = resolve(SACConfig(name="sac", critic_hidden=[32, 16], alpha=0.3), context.env)
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
        torch.testing.assert_close(parameter.grad, reference, rtol=1e-4, atol=1e-6)
