"""Where the shipped Hydra config groups are: in the wheel, or at the repository root."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def conf_dir() -> Path:
    """The ``conf/`` directory: ``neuroplug/conf`` in a wheel, ``<repo>/conf`` otherwise."""
    for candidate in (_PACKAGE_DIR / "conf", _PACKAGE_DIR.parent / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(
        f"neuroplug's config directory was not found next to {_PACKAGE_DIR}; reinstall "
        "neuroplug (pip install .) so the wheel carries neuroplug/conf"
    )
