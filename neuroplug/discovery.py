"""Plugins found in installed distributions' entry points: discovered from metadata, loaded
one at a time on demand.

Every kind is read here, the registry's (:mod:`neuroplug.registry`) and the env families
below it alike, so the rules are written once: discovery reads metadata only (listing
plugins imports nothing, not even torch); one distribution is one claimant of a name, so a
name that two distributions claim is refused naming both; a plugin that fails to load, or
is not of its kind, is reported naming its distribution.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from neuroplug.errors import PluginError

GROUP_PREFIX = "neuroplug."
"""Every entry-point group neuroplug reads is named ``neuroplug.<what it holds>``."""


@dataclass(frozen=True)
class PluginInfo:
    """One entry point, described from metadata alone."""

    kind: str
    """The kind, plural (``algorithms``, ``env_families``)."""
    name: str
    target: str
    """``module:attribute`` of the plugin class."""
    distribution: str
    version: str

    @property
    def who(self) -> str:
        """How errors name it: ``algorithm plugin 'es' from distribution neuroplug 0.1.0``."""
        return (
            f"{singular(self.kind)} plugin {self.name!r} from distribution "
            f"{self.distribution} {self.version}"
        )


def singular(kind: str) -> str:
    """``algorithms`` -> ``algorithm``, ``env_families`` -> ``env_family``."""
    return kind[:-3] + "y" if kind.endswith("ies") else kind[:-1]


def discover(kind: str, group: str) -> dict[str, list[PluginInfo]]:
    """Every entry point in ``group`` by name, sorted, one info per claiming distribution."""
    found: dict[str, list[PluginInfo]] = {}
    seen: set[tuple[str, str, str]] = set()
    for dist_name, version, entry_point in _entry_points():
        if entry_point.group != group:
            continue
        # The same distribution can be visible twice (e.g. an editable install and
        # a stale copy on sys.path); one distribution is one claimant.
        key = (entry_point.name, dist_name.lower().replace("_", "-"), entry_point.value)
        if key in seen:
            continue
        seen.add(key)
        info = PluginInfo(kind, entry_point.name, entry_point.value, dist_name, version)
        found.setdefault(entry_point.name, []).append(info)
    return dict(sorted(found.items()))


def resolve(kind: str, group: str, name: str) -> PluginInfo:
    """The single plugin called ``name``, or an error listing the names or both claimants."""
    plugins = discover(kind, group)
    if name not in plugins:
        available = ", ".join(plugins) or "none installed"
        raise PluginError(
            f"no {singular(kind)} plugin named {name!r}; available {kind}: {available}"
        )
    claimants = plugins[name]
    if len(claimants) > 1:
        owners = " and ".join(
            f"{info.distribution} {info.version} ({info.target})" for info in claimants
        )
        raise PluginError(
            f"{singular(kind)} name {name!r} is claimed by more than one distribution: {owners}; "
            "uninstall one of them or rename its entry point"
        )
    return claimants[0]


def import_target(info: PluginInfo) -> Any:
    """The object an entry point names (``module:attribute``), or a one-line error naming
    its distribution."""
    module_name, _, attribute = info.target.partition(":")
    try:
        target = importlib.import_module(module_name)
        for part in attribute.split(".") if attribute else []:
            target = getattr(target, part)
    except Exception as error:
        raise PluginError(
            f"{info.who} failed to load ({info.target}): {type(error).__name__}: {error}"
        ) from error
    return target


def load(info: PluginInfo, base: type) -> type:
    """The plugin class ``info`` names, refused unless it subclasses ``base``."""
    plugin = import_target(info)
    if not (isinstance(plugin, type) and issubclass(plugin, base)):
        raise PluginError(
            f"{info.who} points at {info.target}, which is not a subclass of "
            f"{base.__module__}.{base.__qualname__}"
        )
    return plugin


_scanned: tuple[tuple, list[tuple[str, str, metadata.EntryPoint]]] | None = None


def _installation_state() -> tuple:
    """What changes when a distribution is installed or removed: the import path and the
    modification times of its directories (an install adds a ``.dist-info`` to one)."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, None))
    return tuple(state)


def _entry_points() -> list[tuple[str, str, metadata.EntryPoint]]:
    """Every installed entry point in a neuroplug group, with its distribution's name
    and version.

    Scanning every distribution takes a few milliseconds and a run asks some 30 times, so
    the scan is kept until the installation changes.
    """
    global _scanned
    state = _installation_state()
    if _scanned is not None and _scanned[0] == state:
        return _scanned[1]
    found = []
    for distribution in metadata.distributions():
        ours = [
            point for point in distribution.entry_points if point.group.startswith(GROUP_PREFIX)
        ]
        if ours:
            # Only a distribution that has a plugin gets its metadata parsed (parsing every
            # installed distribution's took most of a second at start-up).
            name = distribution.metadata["Name"] or "<unknown>"
            found += [(name, distribution.version, point) for point in ours]
    _scanned = (state, found)
    return found
