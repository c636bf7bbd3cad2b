"""The checks every actor-critic learning from a replay buffer makes of its settings
(``td3``, ``sac``, ``cem_rl``, ``erl``), in a module that imports no torch."""

from __future__ import annotations

from neuroplug.errors import require


def check_critic_settings(config) -> None:
    """``learning_starts``, ``gamma``, ``tau`` and ``critic_hidden`` in range, each refused
    in one line naming its field."""
    require(
        config.learning_starts >= 0,
        "algo.learning_starts",
        f"got {config.learning_starts}",
        "an integer >= 0",
    )
    require(0 <= config.gamma <= 1, "algo.gamma", f"got {config.gamma}", "a float in [0, 1]")
    require(0 < config.tau <= 1, "algo.tau", f"got {config.tau}", "a float in (0, 1]")
    hidden = config.critic_hidden
    require(
        len(hidden) >= 1 and all(int(width) >= 1 for width in hidden),
        "algo.critic_hidden",
        f"got {hidden}",
        "a list of positive widths",
    )
