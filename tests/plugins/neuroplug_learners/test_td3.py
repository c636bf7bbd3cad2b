"""algo=td3: the learner contract on Pendulum, learning it, an exact resume with its
replay buffer, and a discrete task refused."""

from __future__ import annotations

import pytest
from neuroplug_learners.td3 import TD3
from neuroplug_learners.td3_config import TD3Config

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import check_learner_contract
from neuroplug.testing.resume_check import check_learner_resume

SMALL = [
    "algo=td3",
    "env=pendulum",
    "net.hidden_sizes=[64,64]",
    "algo.critic_hidden=[64,64]",
    "algo.batch_size=64",
]


def test_td3_honours_the_learner_contract():
    config = TD3Config(
        name="td3", learning_starts=64, batch_size=32, buffer_size=2000, critic_hidden=[32]
    )
    check_learner_contract(TD3, config, task="Pendulum-v1")


def test_td3_learns_pendulum(compose, tmp_path):
    # 2026-11-27 (Zen 5 EPYC), seed 0, 64-64 networks, evaluated every 2k steps: td3
    # -1464, -1239, -915, -184, -152; sac -1185, -245, -157, -172, -139.
    overrides = [*SMALL, "algo.learning_starts=500", "algo.segment_steps=2000"]
    overrides += ["run.max_frames=8000", "run.eval_interval=0", "logger=none"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["eval_return_mean"] > -400, summary  # random: about -1200


def test_td3_resumes_with_its_replay_buffer(compose, tmp_path):
    overrides = [*SMALL, "algo.learning_starts=200", "algo.segment_steps=400"]
    left, _ = check_learner_resume(compose, overrides, tmp_path, segments=3, stop_at=1)
    learner = left["algorithm"]["learner"]
    # 1,200 steps less the resets after each ended episode (not transitions).
    assert learner["updates"] > 0 and 1150 < learner["replay"]["size"] <= 1200


def test_a_discrete_task_is_refused_naming_the_learners_that_take_it(compose, tmp_path):
    with pytest.raises(ConfigError, match="algo=dqn, ppo or appo"):
        run_job(compose(["algo=td3", "env=cartpole", f"run.output_dir={tmp_path}"]))


def test_a_buffer_that_cannot_fit_is_refused_saying_what_fits(compose, tmp_path):
    overrides = ["algo=td3", "env=pendulum", "algo.buffer_size=100_000_000_000"]
    with pytest.raises(ConfigError, match=r"GiB is available") as raised:
        run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert raised.value.field == "algo.buffer_size" and "algo.buffer_size <=" in str(raised.value)


def test_the_written_out_actor_step_computes_autograds_loss_and_gradient():
    import torch
    from neuroplug_learners.twin_critic import critic_of_actions

    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context(task="Pendulum-v1")
    config, _ = resolve(TD3Config(name="td3", critic_hidden=[32, 16]), context.env)
    learner = TD3(config, context)
    assert learner.update.written_out  # the 16-unit MLP
    model = learner.model
    observations = torch.randn(24, 3, generator=torch.Generator().manual_seed(0))

    loss = -critic_of_actions(model.critic, observations, model.mu(observations), 1)[0].mean()
    loss.backward()
    expected = model.actor.grad.clone()
    model.actor.grad.fill_(7.0)  # overwritten, not accumulated into

    written = learner.update._written_out_actor_gradient(model.actor, observations)
    assert written == pytest.approx(float(loss.detach()), rel=1e-5)
    torch.testing.assert_close(model.actor.grad, expected, rtol=1e-4, atol=1e-6)
    assert not any(tensor.grad is not None for tensor in model.critic.parameters())


class _GivenReplay:
    """A replay loop that hands out given minibatches in order, their actions in the unit
    box as an algorithm's buffer keeps them (``tanh`` of a learner's stored actions)."""

    def __init__(self, batches):
        import torch

        self.batches = [dict(batch, actions=torch.tanh(batch["actions"])) for batch in batches]
        self.batch_size = len(batches[0]["rewards"])

    def sample(self, device, minibatches=1):
        assert minibatches == 1  # a critic's: actor 0 reuses it
        return dict(self.batches.pop(0))


def test_cem_rl_with_no_evolutionary_half_takes_td3s_steps():
    """A lone learner is a population of one: the TD3 steps CEM-RL, ERL and PGA-ME run on
    K actors, at K = 1 with the critics' steps of algo=td3 (policy_frequency of them per
    actor step), end bit for bit where algo=td3's gradient steps do on the same minibatches."""
    import copy

    import torch
    from neuroplug_learners.td3 import StackedActors, TD3Update

    from neuroplug.optim.adam import FusedAdam
    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.testing.learner_contract import learner_context

    context = learner_context(task="Pendulum-v1")
    config, _ = resolve(TD3Config(name="td3", critic_hidden=[32, 16]), context.env)
    learner = TD3(config, context)
    generator = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(2 * config.policy_frequency):
        terminated = torch.rand(32, generator=generator) < 0.2
        batches.append(
            {
                "observations": torch.randn(32, 3, generator=generator),
                "next_observations": torch.randn(32, 3, generator=generator),
                "actions": torch.randn(32, 1, generator=generator),
                "rewards": torch.randn(32, generator=generator),
                "terminated": terminated,
                "discounts": config.gamma * (1.0 - terminated.float()),
            }
        )
    critic = copy.deepcopy(learner.model.critic)
    stream = torch.Generator()
    stream.set_state(learner.generator.get_state())
    cooperative = TD3Update(
        context.network,
        critic,
        copy.deepcopy(learner.target.critic),
        FusedAdam(critic.parameters(), config.learning_rate),
        config.tau,
        config.policy_noise,
        config.noise_clip,
        stream,
    )
    actors = StackedActors(learner.model.actor.detach().unsqueeze(0), config.learning_rate)

    replay = _GivenReplay(batches)
    for batch in batches:
        learner._gradient_step(dict(batch))
    stats = cooperative.train(
        actors, replay, actor_steps=2, critic_steps=2 * config.policy_frequency
    )

    assert stats["actor_steps"] == 2 and learner.updates == 2 * config.policy_frequency
    assert torch.equal(actors.params[0], learner.model.actor)
    assert torch.equal(actors.targets[0], learner.target.actor)
    for name, tensor in learner.model.critic.state_dict().items():
        assert torch.equal(cooperative.critic.state_dict()[name], tensor), name
    for name, tensor in learner.target.critic.state_dict().items():
        assert torch.equal(cooperative.target_critic.state_dict()[name], tensor), name
