"""The env families neuroplug knows: one module each, defining ``FAMILY``, and those
packages register.

Adding a family is a module here (an :class:`neuroplug.envs.family.EnvFamily` subclass and
its ``FAMILY`` instance) and its configs in ``conf/env/``; nothing else names it. A package
registers its own under the ``neuroplug.env_families`` entry-point group::

    [project.entry-points."neuroplug.env_families"]
    gridworlds = "my_pkg.family:GridWorlds"   # an EnvFamily subclass, built without arguments
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from neuroplug import discovery
from neuroplug.envs.family import EnvFamily
from neuroplug.errors import ConfigError, PluginError

KIND = "env_families"
"""The kind's name in listings and errors (``--list-plugins`` shows ``env_family``)."""
ENTRY_POINT_GROUP = "neuroplug.env_families"
"""Where a package registers its families."""


@cache
def built_in_families() -> tuple[EnvFamily, ...]:
    """The families neuroplug ships (one module each in this package)."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        family = getattr(importlib.import_module(f"{__name__}.{module.name}"), "FAMILY", None)
        if isinstance(family, EnvFamily):
            found.append(family)
    return tuple(found)


@cache
def all_families() -> tuple[EnvFamily, ...]:
    """Every family, built in and registered, in detection order."""
    found = list(built_in_families())
    found += _registered_families({family.name for family in found})
    return tuple(sorted(found, key=lambda family: (family.detection_order, family.name)))


def _registered_families(built_in: set[str]) -> list[EnvFamily]:
    """The families packages register, each built once, found and loaded by
    :mod:`neuroplug.discovery` as every plugin is."""
    families = []
    for name in discovery.discover(KIND, ENTRY_POINT_GROUP):
        info = discovery.resolve(KIND, ENTRY_POINT_GROUP, name)
        family_class = discovery.load(info, EnvFamily)
        try:
            family = family_class()
        except Exception as error:
            raise PluginError(
                f"{info.who} cannot be built without arguments: {type(error).__name__}: {error}"
            ) from error
        if family.name != name:
            raise PluginError(
                f"{info.who} is named {family.name!r} inside: the entry point's name must be "
                "the family's"
            )
        if name in built_in:
            raise PluginError(
                f"{info.who} takes the name of a family neuroplug ships: rename its entry point"
            )
        families.append(family)
    return families


def family_names() -> tuple[str, ...]:
    """The names ``env.family`` accepts besides ``auto``."""
    return tuple(sorted(family.name for family in all_families()))


def family_named(name: str) -> EnvFamily | None:
    """The family called ``name``, if there is one."""
    return next((family for family in all_families() if family.name == name), None)


def detect_family(settings: dict[str, Any], envpool_spec: Any) -> EnvFamily:
    """The family of a task, from its EnvPool config and spec."""
    return next(family for family in all_families() if family.detects(settings, envpool_spec))


def gymnasium_family(name: str, env_name: str) -> EnvFamily:
    """The family of a gymnasium env: the one ``env.family`` names, else the first that
    claims ``env_name`` (:meth:`EnvFamily.detects_gymnasium`), else ``gymnasium``."""
    if name != "auto":
        family = family_named(name)
        if family is None:
            raise ConfigError("env.family", f"got {name!r}", ", ".join(("auto", *family_names())))
        return family
    claims = (family for family in all_families() if family.detects_gymnasium(env_name))
    return next(claims, None) or family_named("gymnasium")
