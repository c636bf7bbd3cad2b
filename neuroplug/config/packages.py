"""Config options that installed packages add: ``env=<name>`` without a file in this repository.

A package names a data package of its own whose folders are config groups, as ``conf/`` is
laid out (``my_pkg/conf/env/gridworld.yaml``), under the ``neuroplug.conf`` entry-point
group::

    [project.entry-points."neuroplug.conf"]
    my_pkg = "my_pkg.conf"

Each yaml is then an option of its group (``env=gridworld``), composed like a shipped one
(its defaults list may start from ``/schema/env@_here_``). Found from metadata
(:mod:`neuroplug.discovery`, as every plugin is) and the package's files alone: nothing of
the package is imported but the data package's parents.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from neuroplug import discovery
from neuroplug.config.paths import conf_dir
from neuroplug.discovery import PluginInfo
from neuroplug.errors import PluginError

ENTRY_POINT_GROUP = "neuroplug.conf"
"""Where a package names its folder of config groups."""


@dataclass(frozen=True)
class PackageOption:
    """One option a package adds: ``group=name``, read from ``path``."""

    group: str
    name: str
    path: Path
    distribution: str
    version: str


@cache
def package_options() -> tuple[PackageOption, ...]:
    """Every option installed packages add, checked: one a shipped yaml or another package
    already has is refused naming both, as two plugins claiming one name are."""
    shipped = conf_dir()
    found: dict[tuple[str, str], PackageOption] = {}
    infos = [
        info for claims in discovery.discover("conf", ENTRY_POINT_GROUP).values() for info in claims
    ]
    for info in sorted(infos, key=_target):
        distribution, version = info.distribution, info.version
        folder = _folder(info)
        for group in sorted(path for path in folder.iterdir() if path.is_dir()):
            for yaml in sorted(group.glob("*.yaml")):
                option = PackageOption(group.name, yaml.stem, yaml, distribution, version)
                key = (option.group, option.name)
                if (shipped / group.name / yaml.name).is_file():
                    raise PluginError(
                        f"distribution {distribution} {version} adds {group.name}={yaml.stem} "
                        f"({yaml}), an option neuroplug ships: rename its yaml"
                    )
                if key in found:
                    raise PluginError(
                        f"{group.name}={yaml.stem} is added by distributions "
                        f"{found[key].distribution} and {distribution}: uninstall one, or "
                        "rename its yaml"
                    )
                found[key] = option
    return tuple(found.values())


def _target(info: PluginInfo) -> str:
    return info.target


def _folder(info: PluginInfo) -> Path:
    """The directory of the data package an entry point names."""
    where = f"neuroplug.conf entry point {info.name!r} of distribution {info.distribution}"
    try:
        spec = importlib.util.find_spec(info.target)
    except (ImportError, ValueError) as error:
        raise PluginError(
            f"{where} names {info.target!r}, which does not import: {error}"
        ) from None
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise PluginError(
            f"{where} names {info.target!r}: it must be a package (a folder with "
            "__init__.py) whose folders are config groups (env/<name>.yaml)"
        )
    return Path(locations[0])
