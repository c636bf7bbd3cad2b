"""A learner's envs in shards (``scheduler.envs_per_shard``): a shard samples the same bits
whatever other shards share its process, so where shards run never changes a run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neuroplug.api import SamplerRequest
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.errors import ConfigError
from neuroplug.rl.shards import LocalShards, ShardSampling, shard_layout
from neuroplug.runtime.seeds import segment_episode_seeds
from neuroplug.training.components import build_env_and_network, learner_context


def _ppo(envs_per_shard: int, num_envs: int = 8, core: str = "none"):
    from neuroplug_learners.ppo import PPO, PPOConfig

    from neuroplug.plugin_configs.presets import resolve

    env, network = build_env_and_network(
        EnvConfig(task_id="CartPole-v1"), NetConfig(hidden_sizes=[16], core=core, core_size=8)
    )
    context = learner_context(network, env, 3, 10_000, env_threads=1)
    context = type(context)(**{**vars(context), "envs_per_shard": envs_per_shard})
    settings, _ = resolve(
        PPOConfig(name="ppo", num_envs=num_envs, rollout_length=16, segment_steps=256), env
    )
    return PPO(settings, context)


def _request(learner) -> SamplerRequest:
    config = learner.config
    return SamplerRequest(
        learner.context.env,
        config.num_envs,
        1,
        1,
        torch.device("cpu"),
        False,
        False,
        unit=1,
        run_seed=learner.context.seed,
    )


@pytest.mark.kernels
def test_a_shard_samples_the_same_bits_whoever_shares_its_process():
    learner = _ppo(envs_per_shard=4)
    try:
        request = _request(learner)
        layout = shard_layout(request, 4)
        seeds = segment_episode_seeds(learner.context.seed, 0, 8)
        acting = learner.rollout_loop.acting
        acting.refresh()
        everyone, alone = (
            ShardSampling(request, layout, [0, 1]),
            ShardSampling(request, layout, [1]),
        )
        outputs = []
        for sampling in (everyone, alone):
            sampling.start(seeds)
            sampling.start_segment(0)
            outputs.append([sampling.rollout(acting, 16) for _ in range(3)])
            sampling.close()
        for (together, games), (own, own_games) in zip(*outputs, strict=True):
            shard = together.columns(slice(4, 8))
            for name in ("observations", "actions", "log_probs", "values", "rewards", "valid"):
                assert torch.equal(getattr(shard, name), getattr(own, name)), name
            assert torch.equal(shard.next_values, own.next_values)
            mine = [(r, e) for r, e in zip(games.returns, games.envs, strict=True) if e >= 4]
            assert mine == list(zip(own_games.returns, own_games.envs, strict=True))
            assert all(env >= 4 for env in own_games.envs)  # the learner's env numbers
    finally:
        learner.close()


def test_a_sharded_learner_is_reproducible_and_acts_with_each_shards_own_stream():
    states = []
    for envs_per_shard in (4, 4, 2):
        learner = _ppo(envs_per_shard)
        try:
            assert isinstance(learner.sampler, LocalShards)
            assert learner.sampler.layout.count == 8 // envs_per_shard
            for _ in range(2):
                segment = learner.train_segment()
            assert segment.env_steps > 0 and len(segment.returns) > 0
            states.append(learner.policy_params())
        finally:
            learner.close()
    assert torch.equal(states[0], states[1])
    # Other shards are other action streams: another run.
    assert not torch.equal(states[0], states[2])


def test_a_recurrent_learners_shards_act_from_each_envs_state_and_store_it():
    # Re-running the core over each rollout from its stored first states must give the
    # values the shards acted with: each env's state carried from step to step, zeroed
    # where its episode begins, and from one rollout to the next.
    learner = _ppo(envs_per_shard=2, core="gru")
    try:
        assert isinstance(learner.sampler, LocalShards)
        learner.sampler.start(segment_episode_seeds(learner.context.seed, 0, 8))
        learner.start_segment(0)
        learner.sampler.start_segment(0)
        model = learner.model
        carried = None
        for _ in range(3):
            learner.rollout_loop.acting.refresh()
            rollout = learner.sampler.rollout(learner.rollout_loop.acting, 16)
            assert rollout.states is not None and rollout.starts[1:].any()
            if carried is not None:
                going_on = ~rollout.starts[0]
                assert going_on.any()
                torch.testing.assert_close(rollout.states[0][going_on], carried[going_on])
            with torch.no_grad():
                _, values, carried = model.sequence(
                    rollout.observations, rollout.states[0], rollout.starts
                )
            torch.testing.assert_close(values, rollout.values)
            assert rollout.states[1:].abs().sum() > 0  # not reset at every step
    finally:
        learner.close()


@pytest.mark.parametrize(
    ("num_envs", "envs_per_shard", "unit", "message"),
    [
        (8, 3, 1, "3 does not divide the learner's 8 envs"),
        (8, 0, 1, "got 0"),
        (12, 4, 6, "4 envs per shard would split a population member's 6 envs unevenly"),
    ],
)
def test_shards_that_cannot_hold_name_the_field(num_envs, envs_per_shard, unit, message):
    request = SamplerRequest(None, num_envs, 1, 1, torch.device("cpu"), False, False, unit, 0)
    with pytest.raises(ConfigError, match=r"^scheduler\.envs_per_shard: " + message):
        shard_layout(request, envs_per_shard)


def test_population_members_may_hold_several_shards_or_share_one():
    for unit, envs_per_shard in ((4, 2), (2, 4), (4, 4)):
        request = SamplerRequest(None, 8, 1, 1, torch.device("cpu"), False, False, unit, 0)
        assert shard_layout(request, envs_per_shard).count == 8 // envs_per_shard
    assert np.array_equal([shard_layout(request, 2).rows(k).start for k in range(4)], [0, 2, 4, 6])
