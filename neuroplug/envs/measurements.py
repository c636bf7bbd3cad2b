"""Frames with measurements: an image observation and a few numbers beside it, in one array.

Some agents see a screen and read numbers no screen shows well: Doom's health, ammunition
and weapons (the "measurements" of Dosovitskiy and Koltun's DFP agent, and the extra inputs
of Sample Factory's Doom encoder), a robot's joint angles beside its camera. A gymnasium or
PettingZoo env gives them as a ``Dict`` of one image entry and numeric vectors; an EnvPool
task reports them as ``info`` entries beside its frame stacks, which ``env.measurements``
names with their ranges (:func:`info_measurement_layout`,
:mod:`neuroplug.envs.measured_frames`).

Every buffer of neuroplug holds one array per observation (the pools' shared memory, the
learners' rollouts and replay, the evaluation engine), so such an observation travels as
one ``uint8`` frame with the measurements packed below its pixels:

- the frame ``(C, H, W)`` is followed by ``R = ceil(E / W)`` more rows, ``(C, H + R, W)``;
- channel 0 of those rows holds the ``E`` measurements in order, row-major; every other
  byte of them is 0;
- measurement ``i`` is quantised into its declared range ``[low_i, high_i]`` (the vector
  entry's ``Box`` bounds, which must be finite): ``round(255 (v - low) / (high - low))``,
  clipped to 0..255, so the network reads it as a number in [0, 1] once frames are scaled
  (256 levels: Doom's health in steps of under 1 in 200).

The networks that read them (``net.type=nature_cnn``) run their convolutions on the pixels
and join the measurements to their first linear layer's input
(:func:`neuroplug.nets.layers.split_measurements`, a layer's ``measurements``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from neuroplug.envs.flatten import is_frame
from neuroplug.errors import ConfigError

LEVELS = 255
"""The largest byte: a measurement at its range's top."""


def measurement_rows(count: int, width: int) -> int:
    """Rows below the pixels that hold ``count`` measurements in a frame ``width`` wide."""
    return math.ceil(count / width) if count else 0


@dataclass(frozen=True)
class MeasurementLayout:
    """Where a ``Dict`` observation's entries go in the packed frame (see the module
    docstring): the image entry's key, and each vector entry's key and bounds in order."""

    image: str
    """The image entry's key; its space is ``(H, W, C)`` or ``(H, W)`` bytes (``(C, H, W)``
    where :attr:`channels_first`)."""
    frame: tuple[int, int, int]
    """The image as the networks read it: ``(channels, height, width)``."""
    vectors: tuple[tuple[str, int], ...]
    """``(key, size)`` of each vector entry, in the order their values are packed."""
    low: tuple[float, ...]
    high: tuple[float, ...]
    channels_first: bool = False
    """The image is ``(C, H, W)``: an EnvPool task's frame stack, its measurements its info
    entries (``env.measurements``, :func:`info_measurement_layout`)."""

    @property
    def count(self) -> int:
        """E: the measurements, every vector entry's values together."""
        return len(self.low)

    @property
    def shape(self) -> tuple[int, int, int]:
        """The packed frame: ``(C, H + R, W)``."""
        channels, height, width = self.frame
        return (channels, height + measurement_rows(self.count, width), width)

    @cached_property
    def _range(self) -> tuple[np.ndarray, np.ndarray]:
        """Each measurement's ``low`` and ``high - low``, as arrays (read every step)."""
        low = np.asarray(self.low)
        return low, np.asarray(self.high) - low

    def pack(self, observation: Any, into: np.ndarray | None = None) -> np.ndarray:
        """One observation (a mapping of the entries) as its packed frame (``into``: a
        zeroed frame of :attr:`shape` to write it into)."""
        channels, height, width = self.frame
        packed = np.zeros(self.shape, np.uint8) if into is None else into
        image = np.asarray(observation[self.image], np.uint8)
        if self.channels_first:
            packed[:, :height] = image.reshape(channels, height, width)
        else:
            packed[:, :height] = image.reshape(height, width, -1).transpose(2, 0, 1)
        values = np.concatenate(
            [np.asarray(observation[key], np.float64).reshape(-1) for key, _ in self.vectors]
        )
        packed[0, height:] = self.rows(values[None])[0]
        return packed

    def rows(self, values: np.ndarray) -> np.ndarray:
        """``(n, R, W)`` bytes: each of ``n`` rows of the ``E`` measurements (in their units)
        quantised into the rows below channel 0's pixels, the rest 0."""
        width = self.frame[2]
        low, span = self._range
        rows = np.zeros((len(values), self.shape[1] - self.frame[1], width), np.uint8)
        flat = rows.reshape(len(values), -1)
        levels = LEVELS * (np.asarray(values, np.float64) - low) / span
        flat[:, : self.count] = np.rint(levels).clip(0, LEVELS)
        return rows

    def with_rows(self, frames: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Packed frames ``(n, C, H + R, W)`` of ``n`` frames ``(n, C, H, W)`` and their
        measurements ``(n, E)`` (an EnvPool pool's batch)."""
        height = self.frame[1]
        packed = np.zeros((len(frames), *self.shape), np.uint8)
        packed[:, :, :height] = frames
        packed[:, 0, height:] = self.rows(values)
        return packed

    def describe(self) -> dict[str, Any]:
        """The layout in plain types (a policy file keeps it: :meth:`from_description`)."""
        return {
            "image": self.image,
            "frame": list(self.frame),
            "vectors": [[key, size] for key, size in self.vectors],
            "low": list(self.low),
            "high": list(self.high),
            "channels_first": self.channels_first,
        }

    @classmethod
    def from_description(cls, description: dict[str, Any]) -> MeasurementLayout:
        """The layout :meth:`describe` wrote."""
        return cls(
            str(description["image"]),
            tuple(int(size) for size in description["frame"]),
            tuple((str(key), int(size)) for key, size in description["vectors"]),
            tuple(float(value) for value in description["low"]),
            tuple(float(value) for value in description["high"]),
            bool(description.get("channels_first", False)),
        )

    def pack_batch(self, observations: Any) -> np.ndarray:
        """Packed frames ``(b, C, H + R, W)`` of a batch of observations: a mapping of the
        entries with a leading batch dimension each (a vectorised env's)."""
        images = np.asarray(observations[self.image])
        count = len(images)
        packed = np.zeros((count, *self.shape), np.uint8)
        for row in range(count):
            self.pack({key: observations[key][row] for key in self.keys}, into=packed[row])
        return packed

    @property
    def keys(self) -> tuple[str, ...]:
        """The entries it reads: the image's, then the vectors'."""
        return (self.image, *(key for key, _ in self.vectors))

    def unpack(self, packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A packed frame's pixels ``(C, H, W)`` and its measurements in their units (to
        within a level)."""
        height = self.frame[1]
        levels = packed[0, height:].reshape(-1)[: self.count].astype(np.float64)
        low, span = self._range
        return packed[:, :height], low + levels / LEVELS * span


def measurement_layout(
    task_id: str, space: Any, field: str = "env.task_id"
) -> MeasurementLayout | None:
    """The packing of a ``Dict`` observation space of one image entry and numeric vectors
    (None for any other space); ConfigError naming ``field`` (the setting that chose the
    env) and the entry where a vector's range is not finite or there is more than one
    image."""
    entries = getattr(space, "spaces", None)
    if not isinstance(entries, Mapping) or not entries:
        return None  # not a Dict (a Tuple's entries are a tuple)
    images = [key for key, entry in entries.items() if _is_image(entry)]
    if not images:
        return None
    allowed = "a Dict of one image (uint8) and numeric vectors whose Box bounds are finite"
    if len(images) > 1:
        raise ConfigError(
            field, f"{task_id}'s observation has {len(images)} images {images}", allowed
        )
    image = images[0]
    shape = tuple(int(size) for size in entries[image].shape)
    frame = (shape[2] if len(shape) == 3 else 1, shape[0], shape[1])
    if np.dtype(entries[image].dtype) != np.uint8:
        raise ConfigError(
            field,
            f"{task_id}'s observation entry {image!r} is {entries[image]}: an image of "
            "another type than bytes (uint8)",
            allowed,
        )
    vectors, low, high = [], [], []
    for key, entry in entries.items():
        if key == image:
            continue
        bottom = np.asarray(getattr(entry, "low", np.nan), np.float64).reshape(-1)
        top = np.asarray(getattr(entry, "high", np.nan), np.float64).reshape(-1)
        if not (np.all(np.isfinite(bottom)) and np.all(np.isfinite(top)) and np.all(top > bottom)):
            raise ConfigError(
                field,
                f"{task_id}'s observation entry {key!r} is {entry}: a measurement beside "
                "frames needs a finite range of some width (it is packed into a byte)",
                allowed,
            )
        vectors.append((str(key), len(bottom)))
        low += bottom.tolist()
        high += top.tolist()
    return MeasurementLayout(str(image), frame, tuple(vectors), tuple(low), tuple(high))


def info_measurement_layout(
    task_id: str,
    frame: tuple[int, ...],
    ranges: Mapping[str, Any],
    info_keys: frozenset[str],
) -> MeasurementLayout:
    """The packing of an EnvPool task's frames ``(C, H, W)`` with the info entries
    ``ranges`` names (``env.measurements``: each a scalar's ``[low, high]``), in the order
    given; ConfigError naming ``env.measurements`` where the task's observation is not
    frames or it has no such entry (the ones it has listed)."""
    allowed = "a task of frames, and info entries it reports"
    if len(frame) != 3 or not is_frame(tuple(frame)):
        raise ConfigError(
            "env.measurements",
            f"{task_id}'s observation {tuple(frame)} is not frames: measurements are packed "
            "below a screen's pixels",
            allowed,
        )
    missing = sorted(set(ranges) - info_keys)
    if missing:
        raise ConfigError(
            f"env.measurements.{missing[0]}",
            f"{task_id} reports no info entry {missing[0]!r}",
            ", ".join(sorted(info_keys)) or "none: it reports no info entries",
        )
    low = tuple(float(bounds[0]) for bounds in ranges.values())
    high = tuple(float(bounds[1]) for bounds in ranges.values())
    vectors = tuple((str(key), 1) for key in ranges)
    return MeasurementLayout("obs", tuple(frame), vectors, low, high, channels_first=True)


def _is_image(space: Any) -> bool:
    """Whether a Dict entry is frames: ``(H, W)`` or ``(H, W, C)`` large enough to be."""
    shape = tuple(getattr(space, "shape", None) or ())
    return len(shape) in (2, 3) and is_frame(shape if len(shape) == 3 else (*shape, 1))
