"""Novelty search's shared mechanics: an archive of behaviors and k-NN novelty.

Lehman & Stanley (2011), "Abandoning Objectives: Evolution through the Search for Novelty
Alone"; in the form Conti et al. (2018) use for NS-ES::

    N(b, A) = 1/|S| * sum_{a in S} ||b - a||_2,   S = the k nearest neighbours of b in A

``A`` holds one behavior characterisation (see :mod:`neuroplug.evaluation.behaviors`) per archived
policy; it only grows. With fewer than k entries, S is the whole archive.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class BehaviorArchive:
    """Behavior vectors of past policies, queried for k-nearest-neighbour novelty."""

    def __init__(self) -> None:
        self.behaviors: np.ndarray | None = None
        """``(n, d)`` float64, oldest first; None until the first entry."""

    def __len__(self) -> int:
        return 0 if self.behaviors is None else len(self.behaviors)

    def add(self, behaviors: np.ndarray) -> None:
        """Append ``(d,)`` or ``(n, d)`` behavior vectors."""
        rows = np.atleast_2d(np.asarray(behaviors, dtype=np.float64))
        if self.behaviors is None:
            self.behaviors = rows.copy()
            return
        if rows.shape[1] != self.behaviors.shape[1]:
            raise ValueError(
                f"behaviors of size {rows.shape[1]} do not match the archive's {self.behaviors.shape[1]}"
            )
        self.behaviors = np.concatenate([self.behaviors, rows])

    def novelty(self, behaviors: np.ndarray, k: int) -> np.ndarray:
        """``(q,)``: the mean Euclidean distance of each of ``(q, d)`` ``behaviors`` to its
        ``k`` nearest archive entries (all of them while the archive is smaller than k)."""
        if self.behaviors is None:
            raise ValueError("novelty is measured against an archive, and this one is empty")
        queries = torch.from_numpy(np.atleast_2d(np.asarray(behaviors, dtype=np.float64)))
        # The direct (not matrix-product) form: exact for nearby points, where the
        # |a|^2 + |b|^2 - 2ab expansion cancels catastrophically.
        distances = torch.cdist(
            queries,
            torch.from_numpy(self.behaviors),
            compute_mode="donot_use_mm_for_euclid_dist",
        )
        nearest = torch.topk(distances, min(k, len(self)), dim=1, largest=False).values
        return nearest.mean(dim=1).numpy()

    def state_dict(self) -> dict[str, Any]:
        """The archived vectors, for checkpoints."""
        return {"behaviors": None if self.behaviors is None else self.behaviors.copy()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the vectors of :meth:`state_dict`."""
        stored = state["behaviors"]
        self.behaviors = None if stored is None else np.array(stored, dtype=np.float64)


def novelty_proportional(novelty: np.ndarray) -> np.ndarray:
    """Selection probabilities ``N_m / sum_j N_j``; uniform when every novelty is zero."""
    novelty = np.maximum(np.asarray(novelty, dtype=np.float64), 0.0)
    total = novelty.sum()
    if not np.isfinite(total) or total <= 0:
        return np.full(len(novelty), 1.0 / len(novelty))
    return novelty / total
