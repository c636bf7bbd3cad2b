"""Descriptors a user might write for ``algo.behavior=descriptors:<name>`` (tests only)."""

from __future__ import annotations

import numpy as np


def cart_and_pole(observations: np.ndarray, info: dict[str, np.ndarray]) -> np.ndarray:
    """CartPole's final cart position and pole angle: ``(n, 2)``."""
    return observations[:, [0, 2]]


def one_value(observations: np.ndarray, info: dict[str, np.ndarray]) -> np.ndarray:
    """A wrong shape: ``(n,)`` where ``(n, d)`` is the contract."""
    return observations[:, 0]


def broken(observations: np.ndarray, info: dict[str, np.ndarray]) -> np.ndarray:
    """Fails on any input."""
    raise KeyError("no_such_key")


NOT_A_FUNCTION = 3
