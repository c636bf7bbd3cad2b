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
    """Random search, the deep GA paper's baseline: every member fresh from the network's
    initialisation distribution, the best one ever seen deployed. Its population is the
    GA's (``algo=ga``), so both spend the same frames per generation."""

    population_size: int = 1000
    """Fresh members drawn per generation (the search is the same at any size; this sets
    how often the best is reported, and the memory of one generation: P x params)."""
