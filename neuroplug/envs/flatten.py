"""Dict observations (DeepMind Control Suite and other structured tasks) as one flat vector.

EnvPool returns a dm_control task's observation as a dict of arrays (``position``,
``velocity``, …). neuroplug's networks take one vector, so the entries are concatenated in
the task's own order, the order of its observation spec as EnvPool declares it (which is
dm_control's ``observation_spec()`` order, as ``dm_control``'s own ``flatten_observation``
and dmc2gym use), each entry flattened row-major, a scalar taking one slot. The order is
recorded in :attr:`EnvSpec.obs_parts` and shown at start-up. Entries that no network could
read honestly as numbers in a vector (a category such as ``Discrete``, an image among
vectors, nested dicts, text) are refused with the entry named.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neuroplug.errors import ConfigError

ObsParts = tuple[tuple[str, tuple[int, ...]], ...]
"""``((key, shape), ...)``: a dict observation's entries, in the order they are flattened."""


def observation_parts(task_id: str, space: Any) -> ObsParts:
    """The flattening order of a dict observation space, or ``()`` for an array space;
    ConfigError naming the entry for a space that cannot be flattened honestly."""
    entries = getattr(space, "spaces", None)
    if entries is None:
        _check_numeric_array(task_id, "its observation", space, allow_image=True)
        return ()
    parts = []
    for key, entry in entries.items():
        _check_numeric_array(task_id, f"observation entry {key!r}", entry, allow_image=False)
        parts.append((str(key), tuple(int(size) for size in entry.shape)))
    return tuple(parts)


def _check_numeric_array(task_id: str, what: str, space: Any, allow_image: bool) -> None:
    allowed = "array observations, or dicts of numeric arrays (DeepMind Control tasks)"
    shape, dtype = getattr(space, "shape", None), getattr(space, "dtype", None)
    kind = type(space).__name__
    if hasattr(space, "spaces"):
        problem = f"{what} is itself a {kind}: nested structures have no honest fixed order"
    elif hasattr(space, "n") and not hasattr(space, "low"):
        problem = (
            f"{what} is {space}: a category, and its index is not a quantity a network should read"
        )
    elif shape is None or dtype is None or not np.issubdtype(np.dtype(dtype), np.number):
        problem = f"{what} is {kind} {space}: not numbers"
    elif not allow_image and len(shape) >= 3:
        problem = f"{what} is an image {tuple(shape)}: flattened among vectors it would feed raw pixels to an MLP"
    else:
        return
    raise ConfigError("env.task_id", f"{task_id}'s {problem}", allowed)


def flatten(observations: dict[str, np.ndarray], parts: ObsParts) -> np.ndarray:
    """``(num_envs, size)`` float64: the entries of a batch of dict observations, in order."""
    columns = [np.asarray(observations[key]) for key, _ in parts]
    rows = len(columns[0])
    return np.concatenate([column.reshape(rows, -1) for column in columns], axis=1)


class FlatObservationPool:
    """An EnvPool pool whose dict observations come back flat (see :func:`flatten`); every
    other attribute is the pool's own."""

    def __init__(self, pool: Any, parts: ObsParts) -> None:
        self.pool = pool
        self.parts = parts

    def reset(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, Any]:
        observations, info = self.pool.reset(*args, **kwargs)
        return flatten(observations, self.parts), info

    def step(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.step(*args, **kwargs)
        return (flatten(observations, self.parts), *rest)

    def recv(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.recv(*args, **kwargs)
        return (flatten(observations, self.parts), *rest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)
