"""``package.module:Name`` settings (``env.entry_point``, ``env.wrappers``, ``net.module``):
the object one names, or a ConfigError naming the setting."""

from __future__ import annotations

import importlib
from typing import Any

from neuroplug.errors import ConfigError


def load_target(target: str, field: str) -> Any:
    """The object ``target`` (``package.module:Name``) names; a malformed target, a module
    that does not import or a missing name is refused in one line naming ``field``."""
    module_name, colon, attribute = str(target).partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(
            field, f"got {target!r}", "package.module:Class (a colon before the name)"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ConfigError(
            field,
            f"module {module_name!r} does not import: {type(error).__name__}: {first}",
            "an importable package.module:Class (is the package installed, or on PYTHONPATH?)",
        ) from None
    if not hasattr(module, attribute):
        raise ConfigError(
            field, f"module {module_name!r} has no {attribute!r}", "package.module:Class"
        )
    return getattr(module, attribute)
