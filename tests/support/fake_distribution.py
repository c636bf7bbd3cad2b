"""An installed distribution made in a test: a ``.dist-info`` with entry points, and its
files, in a folder the test puts on ``sys.path``, as ``pip install`` would leave them."""

from __future__ import annotations

import textwrap
from pathlib import Path


def install_distribution(
    root: Path,
    name: str,
    entry_points: dict[str, dict[str, str]],
    files: dict[str, str] | None = None,
    version: str = "1.0",
) -> Path:
    """Write distribution ``name`` into ``root``: its metadata, its entry points (group ->
    name -> ``module:attribute``) and ``files`` (path -> text, dedented); returns ``root``."""
    for path, text in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
            for group, entries in entry_points.items()
        )
    )
    return root
