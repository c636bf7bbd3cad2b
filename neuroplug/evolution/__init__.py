"""Shared mechanics of evolutionary algorithms (the base class plugins subclass)."""

from neuroplug.evolution.base import EvolutionAlgorithm
from neuroplug.evolution.shaping import centered_ranks

__all__ = ["EvolutionAlgorithm", "centered_ranks"]
