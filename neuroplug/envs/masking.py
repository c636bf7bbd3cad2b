"""Partially observed tasks: entries of a vector observation hidden from the agent.

``env.observation_mask=[1,3]`` turns CartPole into the classic memory test (Wierstra et al.
2007; Sample Factory and CleanRL's recurrent baselines use the same idea): the cart's and
pole's velocities are removed, so a policy must infer them from the positions it has seen,
which a recurrent core (``net.core=gru``) can and a feed-forward network cannot.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class MaskedObservationPool:
    """A pool whose observations come back without the entries ``hidden``; every other
    attribute is the pool's own (rewards, infos and episode ends are untouched)."""

    def __init__(self, pool: Any, hidden: tuple[int, ...]) -> None:
        self.pool = pool
        self.hidden = list(hidden)

    def _seen(self, observations: np.ndarray) -> np.ndarray:
        return np.delete(observations, self.hidden, axis=1)

    def reset(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, Any]:
        observations, info = self.pool.reset(*args, **kwargs)
        return self._seen(observations), info

    def step(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.step(*args, **kwargs)
        return (self._seen(observations), *rest)

    def recv(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.recv(*args, **kwargs)
        return (self._seen(observations), *rest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)
