"""Dict observations (DeepMind Control Suite and other structured tasks) as one flat vector.

EnvPool returns a dm_control task's observation as a dict of arrays (``position``,
``velocity``, …). neuroplug's networks take one vector, so the entries are concatenated in
the task's own order, the order of its observation spec as EnvPool declares it (which is
dm_control's ``observation_spec()`` order, as ``dm_control``'s own ``flatten_observation``
and dmc2gym use), each entry flattened row-major, a scalar taking one slot. The order is
recorded in :attr:`EnvSpec.obs_parts` and shown at start-up. A category (a ``Discrete``
entry, MiniGrid's ``direction``) is one-hot encoded: its index is not a quantity a network
should read, its one-hot vector is. Entries that no network could read honestly as numbers
in a vector (frames among vectors, nested dicts, text) are refused with the entry named; a
small image (MiniGrid's 7x7 view of object codes) is flattened as a vector is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neuroplug.errors import ConfigError

ObsParts = tuple[tuple[str, tuple[int, ...]], ...]
"""``((key, shape), ...)``: a dict observation's entries, in the order they are flattened."""


def observation_parts(task_id: str, space: Any) -> ObsParts:
    """The flattening order of a dict observation space, or ``()`` for an array space (a
    category entry's part is its one-hot size); ConfigError naming the entry for a space
    that cannot be flattened honestly."""
    entries = getattr(space, "spaces", None)
    if entries is None:
        _check_numeric_array(task_id, "its observation", space, allow_image=True)
        return ()
    parts = []
    for key, entry in entries.items():
        if _is_category(entry):
            parts.append((str(key), (int(entry.n),)))
            continue
        _check_numeric_array(task_id, f"observation entry {key!r}", entry, allow_image=False)
        parts.append((str(key), tuple(int(size) for size in entry.shape)))
    return tuple(parts)


def categorical_entries(space: Any) -> tuple[str, ...]:
    """The entries of a dict observation space that are a category's index (one-hot)."""
    entries = getattr(space, "spaces", None) or {}
    return tuple(str(key) for key, entry in entries.items() if _is_category(entry))


def _is_category(space: Any) -> bool:
    """A ``Discrete(n)`` space of indices from 0 (EnvPool's and gymnasium's)."""
    return (
        hasattr(space, "n")
        and not hasattr(space, "low")
        and not hasattr(space, "spaces")
        and int(getattr(space, "start", 0)) == 0
    )


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
    elif not allow_image and is_frame(shape):
        problem = f"{what} is an image {tuple(shape)}: flattened among vectors it would feed raw pixels to an MLP"
    else:
        return
    raise ConfigError("env.task_id", f"{task_id}'s {problem}", allowed)


MIN_FRAME_SIDE = 36
"""An image entry smaller than this on a side (MiniGrid's 7x7x3 view of object codes) is not
frames: flattened among vectors, as an MLP reads a small image. 36 is the smallest side the
Nature CNN takes (:func:`neuroplug.nets.nature_cnn_geometry.fits_nature_cnn`)."""


def is_frame(shape: tuple[int, ...]) -> bool:
    """Whether an entry of ``shape`` is an image large enough to be frames (HWC or CHW)."""
    if len(shape) < 3:
        return False
    sides = sorted(shape)[-2:]  # height and width: the two largest dimensions
    return min(sides) >= MIN_FRAME_SIDE


def flatten(observations: Any, parts: ObsParts, categorical: tuple[str, ...] = ()) -> np.ndarray:
    """``(num_envs, size)``: the entries of a batch of dict observations (anything indexed
    by key), in order, the ``categorical`` ones one-hot."""
    columns = []
    for key, shape in parts:
        column = np.asarray(observations[key])
        if key in categorical:
            column = np.eye(shape[0], dtype=np.float32)[column.reshape(-1).astype(np.int64)]
        columns.append(column.reshape(len(column), -1))
    return np.concatenate(columns, axis=1)


class FlatObservationPool:
    """An EnvPool pool whose dict observations come back flat (see :func:`flatten`); every
    other attribute is the pool's own."""

    def __init__(self, pool: Any, parts: ObsParts, categorical: tuple[str, ...] = ()) -> None:
        self.pool = pool
        self.parts = parts
        self.categorical = categorical

    def reset(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, Any]:
        observations, info = self.pool.reset(*args, **kwargs)
        return flatten(observations, self.parts, self.categorical), info

    def step(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.step(*args, **kwargs)
        return (flatten(observations, self.parts, self.categorical), *rest)

    def recv(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        observations, *rest = self.pool.recv(*args, **kwargs)
        return (flatten(observations, self.parts, self.categorical), *rest)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)
