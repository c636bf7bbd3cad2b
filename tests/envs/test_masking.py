"""env.observation_mask: entries of a vector observation hidden from the agent."""

from __future__ import annotations

import numpy as np
import pytest

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError


def test_masked_entries_are_removed_from_the_spec_and_from_every_observation():
    full = make_spec(EnvConfig(task_id="CartPole-v1"))
    masked = make_spec(EnvConfig(task_id="CartPole-v1", observation_mask=[3, 1]))
    assert masked.obs_shape == (2,) and masked.observation_mask == (1, 3)
    seeds = np.arange(3)
    pools = [make_pool(spec, seeds) for spec in (full, masked)]
    try:
        (seen_full, _), (seen, _) = (pool.reset() for pool in pools)
        assert np.array_equal(seen, seen_full[:, [0, 2]])
        actions = np.zeros(3, dtype=np.int32)
        (stepped_full, *_), (stepped, *_) = (pool.step(actions) for pool in pools)
        assert np.array_equal(stepped, stepped_full[:, [0, 2]])
    finally:
        for pool in pools:
            pool.close()


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        ([4], "CartPole-v1's 4 entries"),
        ([0, 1, 2, 3], "leaving at least one"),
        ([1, 1], "distinct"),
    ],
)
def test_a_mask_the_task_cannot_take_is_refused_naming_the_field(mask, expected):
    with pytest.raises(ConfigError, match=f"env.observation_mask.*{expected}"):
        make_spec(EnvConfig(task_id="CartPole-v1", observation_mask=mask))
