"""Running mean/std of vector observations (OpenAI ES's observation normalization)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

_CLIP = 5.0
_MIN_STD = 1e-2


@dataclass
class ObservationStats:
    """Sums over a batch of observations, to update a running normalizer."""

    total: np.ndarray
    total_squares: np.ndarray
    count: int


class ObservationNormalizer:
    """Keeps sums of observations; normalizes with the statistics of past generations."""

    def __init__(self, size: int) -> None:
        self.total = np.zeros(size, dtype=np.float64)
        # A small prior keeps the std finite before any data arrives.
        self.total_squares = np.full(size, 1e-2, dtype=np.float64)
        self.count = 1e-2
        self._shift_scale: tuple[np.ndarray, np.ndarray] | None = None
        """(mean, std), computed once per update: ``normalize`` runs every env step."""

    @property
    def mean(self) -> np.ndarray:
        """Current mean estimate."""
        return self.total / self.count

    @property
    def std(self) -> np.ndarray:
        """Current std estimate (floored so rare features do not explode)."""
        variance = np.maximum(self.total_squares / self.count - np.square(self.mean), _MIN_STD**2)
        return np.sqrt(variance)

    def update(self, stats: ObservationStats) -> None:
        """Add a generation's observation sums."""
        self.total += stats.total
        self.total_squares += stats.total_squares
        self.count += stats.count
        self._shift_scale = None

    def normalize(self, observations: np.ndarray) -> np.ndarray:
        """``clip((obs - mean) / std, -5, 5)`` as float32."""
        if self._shift_scale is None:
            self._shift_scale = (self.mean, self.std)
        mean, std = self._shift_scale
        scaled = (observations - mean) / std
        return np.clip(scaled, -_CLIP, _CLIP).astype(np.float32)

    def state_dict(self) -> dict[str, Any]:
        """The sums, for checkpoints."""
        return {
            "total": self.total.copy(),
            "total_squares": self.total_squares.copy(),
            "count": self.count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore sums from a checkpoint."""
        self.total = _float64(state["total"])
        self.total_squares = _float64(state["total_squares"])
        self.count = float(state["count"])
        self._shift_scale = None


def _float64(values: Any) -> np.ndarray:
    """A float64 copy of sums from a checkpoint (numpy arrays) or a policy file (tensors)."""
    if hasattr(values, "numpy"):  # a tensor: numpy reads it through its own array
        values = values.numpy()
    return np.array(values, dtype=np.float64)
