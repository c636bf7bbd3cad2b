"""Which pool kind serves a config: the kinds packages register (entry-point group
``neuroplug.env_pools``), then gymnasium's, then EnvPool's (which serves any
``env.task_id``). Adding a kind is a package; nothing here names one but neuroplug's own."""

from __future__ import annotations

from functools import cache
from importlib import metadata

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.envpool_pools import EnvPoolPools
from neuroplug.envs.gymnasium_pools import GymnasiumPools
from neuroplug.envs.pool_kind import PoolKind
from neuroplug.errors import PluginError

ENTRY_POINT_GROUP = "neuroplug.env_pools"
"""Where a package registers a pool kind: a :class:`PoolKind` subclass, built without
arguments."""


@cache
def pool_kinds() -> tuple[PoolKind, ...]:
    """Every kind, in the order they are asked whether they serve a config."""
    registered = []
    for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=_name):
        where = f"env pool plugin {entry_point.name!r} ({entry_point.value})"
        try:
            kind = entry_point.load()()
        except Exception as error:
            raise PluginError(f"{where} failed to load: {type(error).__name__}: {error}") from error
        if not isinstance(kind, PoolKind):
            raise PluginError(f"{where} is not a subclass of neuroplug.envs.pool_kind.PoolKind")
        registered.append(kind)
    return (*registered, GymnasiumPools(), EnvPoolPools())


def _name(entry_point: metadata.EntryPoint) -> str:
    return entry_point.name


def pool_kind_for(config: EnvConfig) -> PoolKind:
    """The first kind that serves ``config``."""
    return next(kind for kind in pool_kinds() if kind.serves(config))
