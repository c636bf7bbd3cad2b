"""A command line that names something that does not exist, as neuroplug's one-line error.

Hydra reports ``algo=ess`` (no such option), ``experiment=ppo_cartpole`` (an optional group
written without its ``+``) and ``algo.sigmaa=1`` (no such setting) in several lines, with
its config search path. This names what was wrong, the nearest names ("did you mean") and
what is allowed, like every other bad input.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from neuroplug.errors import ConfigError

# Hydra's own groups and neuroplug's internal schemas are not choices a user makes.
_INTERNAL_KEYS = {"hydra", "schema"}

_NOT_IN_DEFAULTS = re.compile(r"Could not override '[^']+'\. No match in the defaults list")
# Hydra's suggestion at the end of its message repeats the override: "... use +algo.sigmaa=1".
_OVERRIDE = re.compile(r"use \+(?P<key>[^=\s]+)=(?P<value>\S*)")


def unknown_option_error(
    error: BaseException, owners_of: Callable[[str, str], list[str]] | None = None
) -> ConfigError | None:
    """The ConfigError for an unknown group option, group or setting in ``error``, else None.

    ``owners_of(group, setting)``: the plugins of ``group`` that have ``setting``
    (:func:`neuroplug.registry.plugins_with_setting`), named where a setting was given to
    the wrong one (``algo=snes algo.c_c=0.1``: a setting of ``algo=cma_es, sep_cma_es``)."""
    from hydra.errors import ConfigCompositionException, MissingConfigException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    if isinstance(error, MissingConfigException) and error.missing_cfg_file:
        group, _, name = str(error.missing_cfg_file).rpartition("/")
        options = [option for option in (error.options or []) if option]
        if not group or not options:
            return None
        return unknown_group_option(group, name, options)
    if not isinstance(error, ConfigCompositionException):
        return None
    override = _OVERRIDE.search(str(error))
    value = override["value"] if override else ""
    if override is not None and _NOT_IN_DEFAULTS.search(str(error)):
        group = override["key"]
        return ConfigError(
            f"{group}={value}",
            f"{group} is an optional group, added with a +; did you mean +{group}={value}?",
        )
    cause = error.__cause__
    if isinstance(cause, ConfigAttributeError | ConfigKeyError) and cause.full_key:
        key = str(cause.key)
        parent = cause.parent_node
        known = [str(name) for name in parent.keys()] if parent is not None else []
        known = [name for name in known if name not in _INTERNAL_KEYS]
        prefix = cause.full_key[: -len(key)] if cause.full_key.endswith(key) else ""
        where = f"{prefix.rstrip('.')} has" if prefix else "the config has"
        group = prefix.rstrip(".")
        owners = owners_of(group, key) if owners_of and group and "." not in group else []
        belongs = f"; it is a setting of {group}={', '.join(owners)}" if owners else ""
        return ConfigError(
            cause.full_key,
            f"{where} no setting {key!r}{_did_you_mean(key, known, prefix, f'={value}')}{belongs}",
            ", ".join(f"{prefix}{name}" for name in sorted(known)),
        )
    return None


def unknown_group_option(group: str, name: str, options: list[str]) -> ConfigError:
    """``<group>=<name>`` names no option of ``group``: the nearest, and all of them."""
    return ConfigError(
        f"{group}={name}",
        f"no {group} option named {name!r}{_did_you_mean(name, options, f'{group}=')}",
        ", ".join(sorted(options)),
    )


def _did_you_mean(name: str, options: list[str], prefix: str, suffix: str = "") -> str:
    """ "; did you mean <prefix><closest><suffix>?" when an option is close to ``name``, else ""."""
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f"; did you mean {prefix}{close[0]}{suffix}?" if close else ""
