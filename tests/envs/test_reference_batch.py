"""Virtual batch norm's reference batch: the run's seed decides it, and it spreads over
many steps of random play."""

from __future__ import annotations

import torch

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.envs.reference_batch import collect_reference_batch


def test_the_run_seed_decides_the_batch():
    spec = make_spec(EnvConfig(task_id="CartPole-v1"))
    first = collect_reference_batch(spec, 32, run_seed=3)
    assert first.shape == (32, 4) and first.dtype == torch.float32
    assert torch.equal(first, collect_reference_batch(spec, 32, run_seed=3))
    assert not torch.equal(first, collect_reference_batch(spec, 32, run_seed=4))
    # Kept from many different steps, not the first observations of a few episodes.
    assert len(torch.unique(first, dim=0)) == 32


def test_atari_frames_stay_uint8_as_the_env_gives_them():
    spec = make_spec(EnvConfig(task_id="Pong-v5"))
    batch = collect_reference_batch(spec, 6, run_seed=0)
    assert batch.shape == (6, *spec.obs_shape) and batch.dtype == torch.uint8
    assert len(torch.unique(batch.flatten(1), dim=0)) == 6
