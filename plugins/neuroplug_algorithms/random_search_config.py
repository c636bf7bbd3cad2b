"""The settings of ``algo=rs`` (random search): its config schema, beside
:mod:`neuroplug_algorithms.random_search`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.algorithm_configs`` entry point ``rs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import AlgorithmConfig


@dataclass
class RandomSearchConfig(AlgorithmConfig):
    """Random search settings (the deep GA paper's population, so frames match its GA)."""

    population_size: int = 1000
    """Fresh members drawn per generation (the search is the same at any size; this sets
    how often the best is reported, and the memory of one generation: P x params)."""
