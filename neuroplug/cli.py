"""Command line: ``python -m neuroplug [--list-plugins] [hydra overrides...]``."""

from __future__ import annotations

import sys

USAGE_EXTRA = """\
neuroplug extra commands:
  --list-plugins   print installed algorithms, learners, backends and schedulers (name, kind,
                   distribution, version) without importing any of them
"""


def list_plugins() -> int:
    """Print every discovered plugin; reads metadata only."""
    from neuroplug import registry

    rows = [("kind", "name", "distribution", "version", "target")]
    names: dict[tuple[str, str], int] = {}
    for info in registry.describe_all():
        rows.append((info.kind[:-1], info.name, info.distribution, info.version, info.target))
        names[(info.kind, info.name)] = names.get((info.kind, info.name), 0) + 1
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    for (kind, name), count in names.items():
        if count > 1:
            print(
                f"warning: {kind[:-1]} {name!r} is claimed by {count} distributions; selecting it will fail"
            )
    return 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m neuroplug`` and the ``neuroplug`` script."""
    argv = sys.argv[1:] if argv is None else argv
    if "--list-plugins" in argv:
        raise SystemExit(list_plugins())
    if "--help" in argv or "-h" in argv:
        print(USAGE_EXTRA)
    import hydra

    from neuroplug.app import hydra_entry
    from neuroplug.config.paths import conf_dir
    from neuroplug.config_store import register_resolvers, register_schemas

    register_resolvers()
    register_schemas()
    sys.argv = [sys.argv[0], *argv]
    hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")(hydra_entry)()
