"""An EnvPool pool whose frames come back with measurements below their pixels.

``env.measurements`` names info entries of an EnvPool task of frames (Doom's ``HEALTH``,
``AMMO2``, ...: the game variables EnvPool reports with every step) and their ranges; each
step's frames ``(C, H, W)`` then come back as ``(C, H + R, W)``, the entries quantised into
the rows below channel 0's pixels (:mod:`neuroplug.envs.measurements`), as a ``Dict``
observation's numbers are. The learners' step driver packs them the same way from
EnvPool's state list (:class:`~neuroplug.envs.raw_steps.RawSteps`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neuroplug.envs.measurements import MeasurementLayout


class MeasuredFramesPool:
    """An EnvPool pool whose observations carry ``layout``'s info entries below their
    pixels; every other attribute is the pool's own."""

    def __init__(self, pool: Any, layout: MeasurementLayout) -> None:
        self.pool = pool
        self.layout = layout

    def values(self, info: Any) -> np.ndarray:
        """``(n, E)``: the measurements in ``info`` (a step's, by entry)."""
        return np.stack([np.asarray(info[key], np.float64) for key, _ in self.layout.vectors], 1)

    def packed(self, frames: np.ndarray, info: Any) -> np.ndarray:
        """``frames`` with ``info``'s measurements below their pixels."""
        return self.layout.with_rows(frames, self.values(info))

    def reset(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, Any]:
        observations, info = self.pool.reset(*args, **kwargs)
        return self.packed(observations, info), info

    def step(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.step(*args, **kwargs)
        return (self.packed(observations, rest[-1]), *rest)

    def recv(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.recv(*args, **kwargs)
        return (self.packed(observations, rest[-1]), *rest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)
