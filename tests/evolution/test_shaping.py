"""Fitness shaping: ranks, centered ranks and NaN handling."""

from __future__ import annotations

import numpy as np

from neuroplug.evolution.shaping import centered_ranks, ranks, sanitize_fitness


def test_ranks_order_values_and_average_ties():
    assert ranks(np.array([3.0, 1.0, 2.0])).tolist() == [2.0, 0.0, 1.0]
    assert ranks(np.array([5.0, 1.0, 5.0, 0.0])).tolist() == [2.5, 1.0, 2.5, 0.0]


def test_centered_ranks_span_minus_half_to_half():
    shaped = centered_ranks(np.array([10.0, -3.0, 7.0, 0.5]))
    assert shaped.min() == -0.5 and shaped.max() == 0.5
    assert np.isclose(shaped.sum(), 0.0)


def test_a_plateau_gives_no_preference():
    assert np.all(centered_ranks(np.full(6, 200.0)) == 0.0)


def test_nonfinite_fitness_becomes_worst():
    cleaned, replaced = sanitize_fitness(np.array([1.0, np.nan, -np.inf, 3.0]))
    assert replaced == 2
    assert cleaned[1] < 1.0 and cleaned[2] < 1.0
    assert np.isfinite(cleaned).all()
