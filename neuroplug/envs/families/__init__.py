"""The env families neuroplug knows: one module each, defining ``FAMILY``.

Adding a family is a module here (an :class:`neuroplug.envs.family.EnvFamily` subclass and
its ``FAMILY`` instance) and its configs in ``conf/env/``; nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from neuroplug.envs.family import EnvFamily


@cache
def all_families() -> tuple[EnvFamily, ...]:
    """Every family, in detection order."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        family = getattr(importlib.import_module(f"{__name__}.{module.name}"), "FAMILY", None)
        if isinstance(family, EnvFamily):
            found.append(family)
    return tuple(sorted(found, key=lambda family: (family.detection_order, family.name)))


def family_names() -> tuple[str, ...]:
    """The names ``env.family`` accepts besides ``auto``."""
    return tuple(sorted(family.name for family in all_families()))


def family_named(name: str) -> EnvFamily | None:
    """The family called ``name``, if there is one."""
    return next((family for family in all_families() if family.name == name), None)


def detect_family(settings: dict[str, Any], envpool_spec: Any) -> EnvFamily:
    """The family of a task, from its EnvPool config and spec."""
    return next(family for family in all_families() if family.detects(settings, envpool_spec))
