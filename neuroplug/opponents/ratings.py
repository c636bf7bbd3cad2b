"""Ratings of players from their games: OpenSkill's Plackett-Luce model (Weng & Lin 2011,
a Bayesian rating of TrueSkill's family, from the ``openskill`` package)."""

from __future__ import annotations

from neuroplug.errors import ConfigError


def rating_model():
    """OpenSkill's Plackett-Luce model, refused in one line where ``openskill`` is missing."""
    try:
        from openskill.models import PlackettLuce
    except ImportError:
        raise ConfigError(
            "selfplay",
            "pool rates its games with the openskill package, which is not installed",
            "pip install 'neuroplug[multiagent]' (or openskill), or selfplay=none",
        ) from None
    return PlackettLuce()
