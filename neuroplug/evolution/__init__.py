"""Shared mechanics of evolutionary algorithms (the base class plugins subclass)."""

from neuroplug.evolution.base import EvolutionAlgorithm, weighted_noise_sums
from neuroplug.evolution.shaping import centered_ranks

__all__ = ["EvolutionAlgorithm", "centered_ranks", "weighted_noise_sums"]
