"""Make ``neuroplug_cem`` importable from a source checkout, without installing it.

Installed (``pip install plugins/neuroplug-cem``) the package is importable anyway; this
lets the main repository's ``pytest`` run these tests straight from the tree.
"""

from __future__ import annotations

import sys
from pathlib import Path

PLUGIN_ROOT = Path(__file__).resolve().parents[1]
"""The distribution's directory: ``pyproject.toml`` and the ``neuroplug_cem`` package."""

if str(PLUGIN_ROOT) not in sys.path:
    sys.path.insert(0, str(PLUGIN_ROOT))
