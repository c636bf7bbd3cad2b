"""Scripted opponents (``selfplay.bots``): a function ``(observations, rng) -> actions``
from a batch of observations (as the learner sees them, one row per agent the bot plays)
and a numpy generator (the run's, so a bot's draws are reproducible), or ``random``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neuroplug.envs.spec import EnvSpec

Bot = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""``(observations (n, *obs), rng) -> actions``: ``(n,)`` ints, or ``(n, A)`` floats in the
env's box."""


def load_bot(name: str, env: EnvSpec) -> Bot:
    """The bot ``name`` names: ``random`` (uniform actions in ``env``'s space) or a
    ``package.module:function`` (refused in one line naming ``selfplay.bots`` where it does
    not import)."""
    if name == "random":
        return random_bot(env)
    from neuroplug.config.targets import load_target

    return load_target(name, "selfplay.bots")


def random_bot(env: EnvSpec) -> Bot:
    """Uniform actions in ``env``'s action space."""
    if env.discrete:
        return lambda observations, rng: rng.integers(0, env.num_actions, len(observations))
    low, high = env.action_low, env.action_high
    return lambda observations, rng: rng.uniform(low, high, (len(observations), len(low)))


def bot_name(name: str) -> str:
    """A bot's short name in tables and metrics: ``random``, or its function's name."""
    return name.rpartition(":")[2]
