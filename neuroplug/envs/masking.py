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


class MaskedSteps:
    """A raw step driver (:func:`neuroplug.envs.raw_steps.step_driver`) whose batches come
    back without the entries ``hidden``, as :class:`MaskedObservationPool` does for pools."""

    def __init__(self, steps: Any, hidden: tuple[int, ...]) -> None:
        self.steps = steps
        self.hidden = list(hidden)

    def recv(self) -> Any:
        """The next batch, its observations without the hidden entries."""
        batch = self.steps.recv()
        return batch._replace(observations=np.delete(batch.observations, self.hidden, axis=1))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.steps, name)
