"""Gymnasium's envs as a pool kind (:class:`GymnasiumPools`): any env ``env.id`` or
``env.entry_point`` names, built by :mod:`neuroplug.envs.gymnasium_spec` and stepped by
:class:`~neuroplug.envs.gymnasium_pool.GymnasiumPool`, in this process or in worker
processes (``env.vectorization``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.pool_kind import PoolKind
from neuroplug.envs.spec import EnvSpec


class GymnasiumPools(PoolKind):
    """Gymnasium envs; a spec's ``maker`` is its :class:`~neuroplug.envs.gymnasium_env.
    EnvMaker`."""

    name = "gymnasium"

    def serves(self, config: EnvConfig) -> bool:
        return bool(config.id or config.entry_point)

    def make_spec(self, config: EnvConfig) -> EnvSpec:
        from neuroplug.envs.gymnasium_spec import make_gymnasium_spec

        return replace(make_gymnasium_spec(config), pool_kind=self)

    def make_pool(
        self, spec: EnvSpec, seeds: np.ndarray, num_threads: int, overrides: dict[str, Any]
    ) -> Any:
        from neuroplug.envs.gymnasium_pool import GymnasiumPool
        from neuroplug.envs.gymnasium_spec import pool_workers

        kwargs = {**spec.make_kwargs, **overrides}
        # Watch's step cap arrives as a make setting, as EnvPool takes it.
        max_steps = kwargs.pop("max_episode_steps", spec.maker.max_episode_steps)
        maker = replace(spec.maker, kwargs=kwargs, max_episode_steps=max_steps)
        return GymnasiumPool(maker, [int(seed) for seed in seeds], pool_workers(spec, len(seeds)))

    def info_keys(self, spec: EnvSpec) -> frozenset[str]:
        return frozenset(spec.maker.info_keys)

    def stepping(self, spec: EnvSpec) -> str:
        """Where the pools step their envs (``env.vectorization``)."""
        from neuroplug.envs.gymnasium_spec import where_pools_step

        return where_pools_step(spec, "envs", "env")
