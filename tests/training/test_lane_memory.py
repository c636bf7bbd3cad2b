"""A text task's members x prompts in flight that would not fit in memory are refused
before anything runs, saying how much they need and what to lower."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.nets.causal_lm import CausalLMNetwork
from neuroplug.training.lane_memory import lane_bytes, refuse_lanes_beyond_memory

ALGO = SimpleNamespace(
    perturbation="lowrank", rank=2, lowrank_min_size=1024, episodes_per_member=64
)


def _network():
    spec = make_spec(EnvConfig(id="neuroplug.envs.text.registration:Addition-v0"))
    kwargs = {"d_model": 32, "layers": 2, "vocabulary": spec.num_actions}
    return spec, CausalLMNetwork(spec.obs_shape, spec.num_actions, kwargs)


def test_a_lane_holds_its_kv_cache_and_its_factors():
    spec, network = _network()
    dense = lane_bytes(network, SimpleNamespace(perturbation="full"))
    assert dense == 4 * 3 * network.state_size
    assert lane_bytes(network, ALGO) > dense


def test_members_times_prompts_beyond_memory_are_refused_naming_what_to_lower():
    spec, network = _network()
    scheduler = SimpleNamespace(max_envs=None)
    per_lane = lane_bytes(network, ALGO)
    lanes = spec.family.engine_lanes  # 256 x 64 episodes: every lane the family gives
    enough = int(lanes * per_lane / 0.8) + 1
    refuse_lanes_beyond_memory(network, spec, ALGO, scheduler, 256, available=enough)
    with pytest.raises(ConfigError) as refused:
        refuse_lanes_beyond_memory(network, spec, ALGO, scheduler, 256, available=enough // 4)
    message = str(refused.value)
    assert message.startswith("scheduler.max_envs: 4,096 episodes in flight (256 members x 64")
    assert "GiB is available" in message and "scheduler.max_envs=" in message
    fits = int(message.split("scheduler.max_envs=")[-1].split()[0])
    assert fits * per_lane <= 0.8 * (enough // 4) < (fits + 1) * per_lane
    # fewer lanes in flight fit
    refuse_lanes_beyond_memory(
        network, spec, ALGO, SimpleNamespace(max_envs=fits), 256, available=enough // 4
    )
