"""The rule of a generation's rounds, as the trainer and the contract check hold an
algorithm to it: each ``tell`` either ends the generation or calls
:meth:`~neuroplug.api.Algorithm.continue_generation`, exactly one of the two."""

from __future__ import annotations

from neuroplug.api import Algorithm
from neuroplug.errors import PluginError


def round_marker(algorithm: Algorithm) -> tuple[int, int]:
    """Where ``algorithm`` stands before a ``tell`` (see :func:`generation_ended`)."""
    return algorithm.generation, algorithm.rounds_requested


def generation_ended(algorithm: Algorithm, before: tuple[int, int]) -> bool:
    """Whether the ``tell`` since ``before`` ended the generation (False: another round).

    Raises :class:`neuroplug.errors.PluginError` unless it did exactly one of the two.
    """
    generation, requested = before
    advanced = algorithm.generation - generation
    asked = algorithm.rounds_requested - requested
    if (advanced, asked) == (1, 0):
        return True
    if (advanced, asked) == (0, 1):
        return False
    raise PluginError(
        f"{type(algorithm).__name__}.tell() must either end the generation (generation "
        f"{generation} -> {generation + 1}) or call continue_generation() once; it moved "
        f"generation to {algorithm.generation} and asked for {asked} more round(s)"
    )
