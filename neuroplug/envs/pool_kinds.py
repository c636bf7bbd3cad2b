"""Which pool kind serves a config: the kinds packages register (entry-point group
``neuroplug.env_pools``), then PettingZoo's multi-agent worlds, gymnasium's, then
EnvPool's (which serves any
``env.task_id``). Adding a kind is a package; nothing here names one but neuroplug's own."""

from __future__ import annotations

from functools import cache

from neuroplug import discovery
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.envpool_pools import EnvPoolPools
from neuroplug.envs.gymnasium_pools import GymnasiumPools
from neuroplug.envs.multi_agent.pools import PettingZooPools
from neuroplug.envs.pool_kind import PoolKind

KIND = "env_pools"
"""The kind's name in errors (``env pool plugin 'walk' from distribution ...``)."""

ENTRY_POINT_GROUP = "neuroplug.env_pools"
"""Where a package registers a pool kind: a :class:`PoolKind` subclass, built without
arguments."""


@cache
def pool_kinds() -> tuple[PoolKind, ...]:
    """Every kind, in the order they are asked whether they serve a config: the registered
    ones (read and loaded by :mod:`neuroplug.discovery`'s rules: one claimant per name,
    errors naming the distribution), then PettingZoo's, gymnasium's, EnvPool's."""
    registered = []
    for name in discovery.discover(KIND, ENTRY_POINT_GROUP):
        info = discovery.resolve(KIND, ENTRY_POINT_GROUP, name)
        registered.append(discovery.load(info, PoolKind)())
    return (*registered, PettingZooPools(), GymnasiumPools(), EnvPoolPools())


def pool_kind_for(config: EnvConfig) -> PoolKind:
    """The first kind that serves ``config``."""
    return next(kind for kind in pool_kinds() if kind.serves(config))
