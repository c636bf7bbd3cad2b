"""Shared mechanics of evolutionary algorithms (the base class plugins subclass).

``from neuroplug.evolution import EvolutionAlgorithm`` is what a plugin writes; the names
are imported on first use, so reading an archive's settings (:mod:`.archive_config`, no
torch) does not import the base and torch with it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EvolutionAlgorithm": "neuroplug.evolution.base",
    "weighted_noise_sums": "neuroplug.evolution.base",
    "centered_ranks": "neuroplug.evolution.shaping",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'neuroplug.evolution' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
