"""Build :class:`EnvSpec` from a config (validating it) and pools from a spec, through the
env's pool kind (:mod:`neuroplug.envs.pool_kind`).

Each pool slot gets its own seed: a slot plays one episode whose seed is a function of
(run seed, generation, episode index). An episode's outcome then depends only on its seed
and its policy — not on which slot, thread or schedule ran it — which is what makes
resumed runs and different schedulers agree exactly.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.masking import MaskedObservationPool
from neuroplug.envs.pool_kinds import pool_kind_for
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import require


def make_spec(config: EnvConfig) -> EnvSpec:
    """Validate ``config`` and describe the environment, by the pool kind that serves it
    (an EnvPool task starts nothing; a gymnasium env is built and probed once)."""
    spec = pool_kind_for(config).make_spec(config)
    return _masked(_mapped(spec, config.policy_mapping), config.observation_mask)


def _mapped(spec: EnvSpec, setting: Any) -> EnvSpec:
    """``spec`` with its agents' policies (``env.policy_mapping``), checked against its
    agents; a one-agent env takes ``shared`` alone."""
    from neuroplug.envs.multi_agent.mapping import policy_mapping

    if not spec.agents:
        require(
            setting == "shared",
            "env.policy_mapping",
            f"{spec.task_id} has one agent, so one policy",
            "shared (a multi-agent env: env.parallel_env, or an EnvPool task with players)",
        )
        return spec
    plain = setting if isinstance(setting, str) else {str(k): str(v) for k, v in setting.items()}
    policy_mapping(spec.agents, plain)  # an agent left without a policy fails here
    return dataclasses.replace(spec, policy_mapping=plain)


def _masked(spec: EnvSpec, mask: list[int]) -> EnvSpec:
    """``spec`` with the observation entries ``mask`` removed (``env.observation_mask``)."""
    if not mask:
        return spec
    size = spec.obs_shape[0]
    require(
        len(spec.obs_shape) == 1,
        "env.observation_mask",
        f"{spec.task_id} observes shape {spec.obs_shape}, not a vector",
        "an empty list for image tasks",
    )
    require(
        max(mask) < size and len(mask) < size,
        "env.observation_mask",
        f"got {list(mask)} for {spec.task_id}'s {size} entries",
        f"distinct indices in [0, {size - 1}], leaving at least one entry",
    )
    removed = tuple(sorted(int(i) for i in mask))
    bounds = spec.obs_bounds
    if bounds is not None:
        bounds = tuple(pair for i, pair in enumerate(bounds) if i not in removed)
    return dataclasses.replace(
        spec, obs_shape=(size - len(mask),), observation_mask=removed, obs_bounds=bounds
    )


def make_pool(spec: EnvSpec, seeds: np.ndarray, num_threads: int = 0, **overrides: Any):
    """A pool of ``spec``'s env with one slot per seed, built by the env's pool kind
    (:class:`~neuroplug.envs.pool_kind.PoolKind`: EnvPool's, gymnasium's, a package's), all
    with the same calls; dict observations come back flat (:mod:`neuroplug.envs.flatten`)
    and masked entries removed.

    ``overrides`` replace make settings of the spec (a learner's ``episodic_life``, say)
    for this pool only."""
    if spec.observation_mask:
        hidden = spec.observation_mask
        seen = dataclasses.replace(spec, observation_mask=())
        return MaskedObservationPool(make_pool(seen, seeds, num_threads, **overrides), hidden)
    return spec.pool_kind.make_pool(spec, seeds, num_threads, overrides)


def engine_pool_settings(spec: EnvSpec) -> dict[str, Any]:
    """``envpool.make`` settings of the evaluation engine's pools beyond the spec's (the
    family's: on Atari EnvPool's random no-op starts are off, the engine plays
    ``spec.start_noops``)."""
    return spec.family.engine_pool_settings()
