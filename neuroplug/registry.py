"""The plugin kinds, and loading a plugin of one: its class, its config, its contract.

Each kind is a row (:class:`PluginKind`): where it registers, how a user selects it, what
it subclasses. Finding plugins in entry-point metadata, and the errors of a missing,
doubly claimed or broken one, are :mod:`neuroplug.discovery`'s; this module adds what the
kinds need beyond that: their config classes (read without importing the plugin where its
distribution names one apart) and the check that a plugin was written for this contract.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from neuroplug import api, discovery
from neuroplug.discovery import PluginInfo
from neuroplug.envs import families, pool_kinds
from neuroplug.envs.family import EnvFamily
from neuroplug.errors import PluginError


@dataclass(frozen=True)
class PluginKind:
    """One kind of plugin: where it registers, how a user selects it, what it subclasses."""

    name: str
    """Plural name used in messages and listings (``algorithms``)."""
    entry_point_group: str
    """The entry-point group a package registers under (``neuroplug.algorithms``)."""
    config_group: str
    """The Hydra config group that selects one (``algo``)."""
    base: type | str
    """The class every plugin of this kind subclasses, or its ``module:Class`` where
    importing it would import torch (networks): imported only to load a plugin."""
    config_base: type
    """The dataclass every plugin config of this kind derives from."""
    config_entry_point_group: str = ""
    """The entry-point group naming each plugin's config class apart from the plugin
    (``neuroplug.algorithm_configs``): a module that imports no torch, so the command line
    checks values and prints ``--help`` without importing the plugin. Optional for a
    plugin; without one, its ``config_class`` is read by loading it."""

    def base_class(self) -> type:
        """:attr:`base`, imported where it is named."""
        if isinstance(self.base, str):
            module, _, name = self.base.partition(":")
            return getattr(importlib.import_module(module), name)
        return self.base

    @property
    def singular(self) -> str:
        """``algorithm`` (``env_family``), for messages about one plugin."""
        return discovery.singular(self.name)


KINDS: dict[str, PluginKind] = {
    kind.name: kind
    for kind in (
        PluginKind(
            "algorithms",
            "neuroplug.algorithms",
            "algo",
            api.Algorithm,
            api.AlgorithmConfig,
            "neuroplug.algorithm_configs",
        ),
        PluginKind(
            "backends",
            "neuroplug.backends",
            "backend",
            api.Backend,
            api.BackendConfig,
            "neuroplug.backend_configs",
        ),
        PluginKind(
            "schedulers",
            "neuroplug.schedulers",
            "scheduler",
            api.Scheduler,
            api.SchedulerConfig,
            "neuroplug.scheduler_configs",
        ),
        # Learners share the ``algo`` group with evolutionary algorithms: algo=ppo, algo=es.
        PluginKind(
            "learners",
            "neuroplug.learners",
            "algo",
            api.Learner,
            api.LearnerConfig,
            "neuroplug.learner_configs",
        ),
    )
}
"""Every plugin kind; a new kind is one row here (and its base class in :mod:`neuroplug.api`)."""

ENV_FAMILIES = PluginKind(families.KIND, families.ENTRY_POINT_GROUP, "env", EnvFamily, type(None))
"""Env families (:mod:`neuroplug.envs.family`): selected by ``env.family`` (or claimed by
the env they know), with no config class of their own, so not among :data:`KINDS`; listed
here, loaded below the registry by :func:`neuroplug.envs.families.all_families`."""

NETWORKS = PluginKind(
    "networks",
    "neuroplug.networks",
    "net",
    "neuroplug.nets.network:Network",
    object,
    "neuroplug.network_configs",
)
"""Network architectures (:mod:`neuroplug.experiment.network_choice`): selected by ``net.type``, their own
settings under ``net.kwargs`` (a network's config class, named by its
``neuroplug.network_configs`` entry point, is the dataclass of those); not among
:data:`KINDS`, whose config classes are whole Hydra options."""

CORES = PluginKind(
    "cores",
    "neuroplug.cores",
    "net.core",
    "neuroplug.nets.cells:RecurrentCore",
    object,
)
"""Recurrent cores (:mod:`neuroplug.nets.core`): selected by ``net.core``, the cell between
a network's encoder and its output; no settings of their own (``net.core_size`` is their
width)."""

ENV_POOLS = PluginKind(
    pool_kinds.KIND,
    pool_kinds.ENTRY_POINT_GROUP,
    "env",
    "neuroplug.envs.pool_kind:PoolKind",
    object,
)
"""Kinds of env pool (:mod:`neuroplug.envs.pool_kind`): a package's simulator, asked before
gymnasium's and EnvPool's whether it serves the run's ``env``; listed here, loaded below
the registry by :func:`neuroplug.envs.pool_kinds.pool_kinds`."""

_ALL_KINDS: dict[str, PluginKind] = {
    **KINDS,
    ENV_FAMILIES.name: ENV_FAMILIES,
    ENV_POOLS.name: ENV_POOLS,
    NETWORKS.name: NETWORKS,
    CORES.name: CORES,
}


def kind_of(kind: str) -> PluginKind:
    """The row of :data:`KINDS` called ``kind``, or an error listing the kinds."""
    if kind not in _ALL_KINDS:
        raise PluginError(f"unknown plugin kind {kind!r}; kinds are: {', '.join(_ALL_KINDS)}")
    return _ALL_KINDS[kind]


def discover(kind: str) -> dict[str, list[PluginInfo]]:
    """All plugins of ``kind`` by name; a name with several claimants has several infos."""
    return discovery.discover(kind, kind_of(kind).entry_point_group)


def resolve(kind: str, name: str) -> PluginInfo:
    """The single plugin called ``name``, or an error listing names or both claimants."""
    return discovery.resolve(kind, kind_of(kind).entry_point_group, name)


def _config_entry_point(kind: str, name: str, info: PluginInfo) -> PluginInfo | None:
    """The config entry point the plugin's own distribution declares for it, if any."""
    group = kind_of(kind).config_entry_point_group
    declared = discovery.discover(kind, group).get(name, []) if group else []
    return next((entry for entry in declared if entry.distribution == info.distribution), None)


def declares_config_entry_point(kind: str, name: str) -> bool:
    """Whether the plugin's distribution names its config class apart (metadata only)."""
    return _config_entry_point(kind, name, resolve(kind, name)) is not None


def load_config_class(kind: str, name: str) -> type:
    """The config class of the plugin registered as ``name``: from the config entry point
    its distribution declares (a light module, imported without the plugin and torch), else
    the loaded plugin's ``config_class``."""
    info = resolve(kind, name)
    entry = _config_entry_point(kind, name, info)
    if entry is None:
        return load(kind, name).config_class
    config_class = discovery.import_target(entry)
    if not isinstance(config_class, type):
        raise PluginError(f"{info.who}: its config entry point {entry.target} is not a class")
    return config_class


def load(kind: str, name: str) -> type:
    """Import and return the plugin class registered as ``name`` for ``kind``."""
    info = resolve(kind, name)
    plugin = discovery.load(info, kind_of(kind).base_class())
    _check_contract(plugin, kind, info)
    entry = _config_entry_point(kind, name, info)
    if entry is not None and discovery.import_target(entry) is not plugin.config_class:
        # The command line checked values against the entry point's class; the run must
        # be built from the same one.
        raise PluginError(
            f"{info.who}: its config entry point names {entry.target}, but "
            f"{info.target}.config_class is "
            f"{plugin.config_class.__module__}.{plugin.config_class.__qualname__}; make them the same class"
        )
    return plugin


def _check_contract(plugin: type, kind: str, info: PluginInfo) -> None:
    """Refuse, in one line, a plugin written for another contract than this neuroplug's."""
    written_for = getattr(plugin, "contract", None)
    if isinstance(written_for, int) and written_for != api.CONTRACT_VERSION:
        advice = "upgrade neuroplug" if written_for > api.CONTRACT_VERSION else "update the plugin"
        raise PluginError(
            f"{info.who} was written for neuroplug's plugin contract {written_for}; this neuroplug "
            f"has contract {api.CONTRACT_VERSION} ({advice}; what changed between contracts "
            "is listed in neuroplug's CHANGELOG.md)"
        )
    missing = sorted(getattr(plugin, "__abstractmethods__", ()))
    if missing:
        raise PluginError(
            f"{info.who} does not implement {_qualified(kind_of(kind).base_class())}'s "
            f"{', '.join(f'{method}()' for method in missing)} (contract {api.CONTRACT_VERSION}; "
            "see neuroplug.api and the CHANGELOG)"
        )


def construct(kind: str, name: str, plugin: type, *arguments: Any) -> Any:
    """``plugin(*arguments)``, with a constructor that does not take neuroplug's arguments
    (a plugin written for another contract) reported in one line naming its distribution."""
    try:
        return plugin(*arguments)
    except TypeError as error:
        if error.__traceback__ is None or error.__traceback__.tb_next is not None:
            raise  # raised inside the constructor: the plugin's own error
        raise PluginError(
            f"{resolve(kind, name).who} cannot be built with neuroplug's arguments ({error}); contract "
            f"{api.CONTRACT_VERSION} builds it as {plugin.__name__}"
            f"({', '.join(type(argument).__name__ for argument in arguments)})"
        ) from None


def describe_all() -> list[PluginInfo]:
    """Every discovered plugin of every kind, for listings (imports nothing)."""
    return [info for kind in _ALL_KINDS for infos in discover(kind).values() for info in infos]


def selected_kind(config_group: str, name: str) -> PluginKind:
    """The kind of the plugin a user selected with ``<config_group>=<name>``.

    Several kinds may share a config group (algorithms and learners are both ``algo``);
    the name must belong to exactly one of them.
    """
    kinds = [kind for kind in KINDS.values() if kind.config_group == config_group]
    if not kinds:
        raise PluginError(f"no plugin kind is selected through {config_group!r}")
    owners = [kind for kind in kinds if name in discover(kind.name)]
    if not owners:
        available = sorted(plugin for kind in kinds for plugin in discover(kind.name))
        raise PluginError(
            f"no {config_group} plugin named {name!r}; available: "
            f"{', '.join(available) or 'none installed'}"
        )
    if len(owners) > 1:
        claims = " and ".join(
            f"{kind.singular} {info.target} ({info.distribution})"
            for kind in owners
            for info in discover(kind.name)[name]
        )
        raise PluginError(
            f"{config_group}={name} is claimed by more than one kind of plugin: {claims}; "
            "rename one entry point"
        )
    return owners[0]


def load_selected(config_group: str, name: str) -> tuple[PluginKind, type]:
    """The plugin a user selected with ``<config_group>=<name>``, and its kind."""
    kind = selected_kind(config_group, name)
    return kind, load(kind.name, name)


def selected_config_class(config_group: str, name: str) -> type:
    """The config class of the plugin selected with ``<config_group>=<name>``, read without
    importing the plugin where it declares a config entry point (:func:`load_config_class`)."""
    return load_config_class(selected_kind(config_group, name).name, name)


def plugins_with_setting(config_group: str, setting: str) -> list[str]:
    """The plugins of ``config_group`` whose config class has a field ``setting`` (read
    from their config entry points, without importing torch): where a setting given to the
    wrong plugin belongs (``algo.c_c`` is ``cma_es``'s)."""
    owners = []
    for kind in KINDS.values():
        if kind.config_group != config_group:
            continue
        for name in sorted(discover(kind.name)):
            if not declares_config_entry_point(kind.name, name):
                continue
            try:
                config_class = load_config_class(kind.name, name)
            except PluginError:
                continue
            if setting in getattr(config_class, "__dataclass_fields__", {}):
                owners.append(name)
    return owners


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
