"""Shared mechanics of evolutionary algorithms (the base class plugins subclass)."""

from neuroplug.algorithms.base import EvolutionAlgorithm
from neuroplug.algorithms.shaping import centered_ranks

__all__ = ["EvolutionAlgorithm", "centered_ranks"]
