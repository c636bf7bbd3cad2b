"""The members' PPO updates stacked into one computation: the per-member update's results,
whatever company a member keeps."""

from __future__ import annotations

import pytest
import torch
from neuroplug_learners.pbt import PBT, PBTConfig
from neuroplug_learners.ppo_stacked import PopulationPPOUpdate

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.plugin_configs.presets import resolve
from neuroplug.training.components import build_env_and_network, learner_context


def _population_and_rollout(members: int = 3, **member_settings):
    env, network = build_env_and_network(
        EnvConfig(task_id="CartPole-v1"), NetConfig(hidden_sizes=[64, 64])
    )
    context = learner_context(network, env, 0, 100_000, env_threads=1)
    config = PBTConfig(
        name="pbt",
        members=members,
        per_member={"learning_rate": [1e-3, 3e-3, 3e-4][:members]},
        member={"num_envs": 4, "rollout_length": 64, **member_settings},
    )
    settings, _ = resolve(config, env)
    population = PBT(settings, context)
    rollout = population.rollout_loop.first_rollout(population, 64)
    # Different settings per member, so a mix-up between them would show.
    for member, clip in zip(population.members, (0.2, 0.1, 0.3), strict=False):
        member.config.clip_coef = clip
    return population, rollout


def _snapshot(population):
    return [
        (member.policy_params(), member.model.critic_vector(), member.update.version)
        for member in population.members
    ]


def test_the_stacked_update_is_the_per_member_update():
    population, rollout = _population_and_rollout()
    try:
        assert (
            population.rollout_loop.update is not None
        )  # PPO members on an MLP stack their updates
        before = [member.state_dict() for member in population.members]
        stacked_stats = population.rollout_loop.update.learn(rollout)
        stacked = _snapshot(population)
        for member, state in zip(population.members, before, strict=True):
            member.load_state_dict(state)
            member.start_segment(0)
        alone = [
            member.learn_rollout(rollout.columns(population.member_envs(k)))
            for k, member in enumerate(population.members)
        ]
        for (actor, critic, version), member, stats, own in zip(
            stacked, population.members, stacked_stats, alone, strict=True
        ):
            torch.testing.assert_close(actor, member.policy_params(), atol=2e-5, rtol=1e-4)
            torch.testing.assert_close(critic, member.model.critic_vector(), atol=2e-5, rtol=1e-4)
            assert version == member.update.version
            for key, value in own.items():
                assert abs(stats[key] - value) <= 1e-4 * max(1.0, abs(value)), key
    finally:
        population.close()


@pytest.mark.kernels
def test_a_members_update_does_not_depend_on_its_companions():
    # Minibatches drawn from each member's own generator. The same company with other
    # weights: member 0's update is the same bits (its rows meet its own matrices only).
    # Alone: the batched products change shape, so it agrees to rounding (on Intel CPUs
    # with AVX-512 its last bits move; docs/reproducibility.md).
    population, rollout = _population_and_rollout(minibatches=4, epochs=3)
    try:
        before = [member.state_dict() for member in population.members]

        def restart():
            for member, state in zip(population.members, before, strict=True):
                member.load_state_dict(state)
                member.start_segment(0)

        population.rollout_loop.update.learn(rollout)
        together = _snapshot(population)[0]
        restart()
        for member in population.members[1:]:
            flat = member.update.trained.flat.data
            flat.add_(0.1 * torch.randn(flat.shape, generator=torch.Generator().manual_seed(4)))
        population.rollout_loop.update.learn(rollout)
        other_company = _snapshot(population)[0]
        assert torch.equal(together[0], other_company[0])
        assert torch.equal(together[1], other_company[1])
        restart()
        first = population.members[0]
        PopulationPPOUpdate([first]).learn(rollout.columns(population.member_envs(0)))
        alone = _snapshot(population)[0]
        torch.testing.assert_close(together[0], alone[0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(together[1], alone[1], atol=1e-6, rtol=1e-5)
    finally:
        population.close()


def test_gaussian_members_stack_their_updates_too():
    # Pendulum: continuous actions, each member with its own learned log-std.
    env, network = build_env_and_network(
        EnvConfig(task_id="Pendulum-v1"), NetConfig(hidden_sizes=[16])
    )
    context = learner_context(network, env, 0, 100_000, env_threads=1)
    config = PBTConfig(
        name="pbt",
        members=2,
        per_member={"entropy_coef": [0.0, 0.5]},
        member={"num_envs": 2, "rollout_length": 64, "minibatches": 1, "epochs": 3},
    )
    settings, _ = resolve(config, env)
    population = PBT(settings, context)
    try:
        assert population.rollout_loop.update is not None
        rollout = population.rollout_loop.first_rollout(population, 64)
        before = [member.state_dict() for member in population.members]
        population.rollout_loop.update.learn(rollout)
        stacked = [(m.policy_params(), m.model.log_std.detach().cpu()) for m in population.members]
        for member, state in zip(population.members, before, strict=True):
            member.load_state_dict(state)
        for k, member in enumerate(population.members):
            member.learn_rollout(rollout.columns(population.member_envs(k)))
            torch.testing.assert_close(stacked[k][0], member.policy_params(), atol=2e-5, rtol=1e-4)
            torch.testing.assert_close(
                stacked[k][1], member.model.log_std.detach().cpu(), atol=2e-5, rtol=1e-4
            )
        assert not torch.equal(stacked[0][1], before[0]["model"]["log_std"])
    finally:
        population.close()
