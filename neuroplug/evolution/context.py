"""An algorithm's context made from the run's network, as the trainer and tests make it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from neuroplug.api import AlgorithmContext
from neuroplug.nets.network import Network, SeededInitializer

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec


def algorithm_context(network: Network, seed: int, env: EnvSpec | None = None) -> AlgorithmContext:
    """The context of a run on ``env``: ``network`` initialised from ``seed``."""
    initializer = SeededInitializer(network)
    return AlgorithmContext(network, initializer(seed), seed, initializer, env)
