"""Fitness shaping: turn raw returns into update weights robust to outliers."""

from __future__ import annotations

import numpy as np


def ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each value, 0 for the smallest; tied values share their average rank.

    Averaging ties matters: with arbitrary tie-breaking, a population whose returns are
    all equal (a plateau, a sparse-reward task) would still produce a gradient.
    """
    flat = values.ravel()
    order = np.argsort(flat, kind="stable")
    sorted_values = flat[order]
    # Start index of each run of equal values, and the average rank of that run.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(flat)]
    average = (starts + ends - 1) / 2.0
    result = np.empty(len(flat), dtype=np.float64)
    result[order] = np.repeat(average, ends - starts)
    return result.reshape(values.shape)


def centered_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks scaled to [-0.5, 0.5] (Salimans et al. 2017)."""
    if values.size < 2:
        return np.zeros(values.shape)
    return ranks(values) / (values.size - 1) - 0.5


def sanitize_fitness(fitness: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace NaN/inf by the worst finite value (minus one); return how many were replaced."""
    bad = ~np.isfinite(fitness)
    if not bad.any():
        return fitness, 0
    finite = fitness[~bad]
    worst = (finite.min() if len(finite) else 0.0) - 1.0
    cleaned = fitness.copy()
    cleaned[bad] = worst
    return cleaned, int(bad.sum())
