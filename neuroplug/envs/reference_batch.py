"""Virtual batch norm's reference batch: observations of the task, collected once per run.

As in the ES papers' code, the batch is what a policy taking uniformly random actions
sees: each observation after a step is kept with a small probability, so the batch spreads
over many episodes and over their course instead of their first frames. The run's seed
decides everything (the envs' seeds, the actions, the draws), and the batch is saved in
the run's checkpoints, so a resumed run and watching a policy normalize by the same one.
"""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.envs.make import engine_pool_settings, make_pool
from neuroplug.envs.spec import EnvSpec
from neuroplug.runtime.seeds import reference_rng

KEEP_PROBABILITY = 0.01
"""The chance that an observation joins the batch (Uber's ``get_ref_batch`` keeps 1 in 100)."""

ENVS = 8
"""Envs stepped side by side while collecting."""


def collect_reference_batch(
    env: EnvSpec, size: int, run_seed: int, num_threads: int = 0
) -> torch.Tensor:
    """``(size, *obs_shape)`` observations of ``env`` under uniformly random actions, as
    the env gives them (uint8 frames stay uint8), each step's kept with
    :data:`KEEP_PROBABILITY`."""
    rng = reference_rng(run_seed)
    seeds = rng.integers(0, 2**31 - 1, size=ENVS)
    pool = make_pool(env, seeds, num_threads, **engine_pool_settings(env))
    kept: list[np.ndarray] = []
    try:
        pool.async_reset()
        while len(kept) < size:
            observations, *_, info = pool.recv()
            env_ids = np.asarray(info["env_id"], dtype=np.int32)
            # Rows in env order: the draws then do not depend on the order the pool answers in.
            order = np.argsort(env_ids, kind="stable")
            chosen = order[rng.random(len(order)) < KEEP_PROBABILITY]
            kept += [np.array(observations[row]) for row in chosen]
            pool.send(_random_actions(env, rng, len(order)), env_ids[order])
    finally:
        pool.close()
    return torch.from_numpy(np.stack(kept[:size]))


def _random_actions(env: EnvSpec, rng: np.random.Generator, count: int) -> np.ndarray:
    if env.discrete:
        return rng.integers(0, env.num_actions, size=count).astype(np.int32)
    low, high = np.asarray(env.action_low), np.asarray(env.action_high)
    return rng.uniform(low, high, size=(count, env.num_actions)).astype(np.float32)
