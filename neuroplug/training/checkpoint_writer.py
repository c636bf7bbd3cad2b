"""Writing a run's checkpoints without stalling it: a large one is written beside the next unit.

Serialising, checksumming and syncing hundreds of megabytes (CMA-ES's covariance, a replay
buffer) takes seconds; the run need not wait for it. A state larger than
:data:`BACKGROUND_BYTES` is written by one background thread while the next generation or
segment runs; a smaller one is written at once, as before. The state handed over is a
snapshot (the trainer's ``state()`` copies everything the algorithm would change in place),
and the write itself is the same atomic rename with the previous file kept
(:mod:`neuroplug.training.checkpoint`), so a crash or ``kill -9`` at any moment leaves the
last complete checkpoint. One write at a time, in order: the next write, the end of the run
and a stop wait for the one in flight; an error in the background is raised at that wait.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

BACKGROUND_BYTES = 100 * 2**20
"""A checkpoint whose arrays hold more than this is written in the background."""


def state_bytes(state: Any) -> int:
    """The bytes of the tensors and arrays in ``state`` (nested dicts, lists and tuples)."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, np.ndarray | bytes):
        return state.nbytes if isinstance(state, np.ndarray) else len(state)
    if isinstance(state, dict):
        return sum(state_bytes(value) for value in state.values())
    if isinstance(state, list | tuple):
        return sum(state_bytes(value) for value in state)
    return 0


class CheckpointWriter:
    """Runs ``write(state)`` for each checkpoint, in the background where the state is large.

    ``started`` is called with the state's bytes when a write begins in the background (the
    trainer says the size once); ``finished`` with the seconds a write took, on whichever
    thread ran it (the trainer's ``run.checkpoint_share`` rule reads it).
    ``background_bytes``: the size above which a write goes to the background (default
    :data:`BACKGROUND_BYTES`).
    """

    def __init__(
        self,
        write: Callable[[dict[str, Any]], None],
        started: Callable[[int], None],
        finished: Callable[[float], None],
        background_bytes: int | None = None,
    ) -> None:
        self._write = write
        self._started = started
        self._finished = finished
        self._background_bytes = background_bytes
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def writing(self) -> bool:
        """Whether a background write is in flight."""
        return self._thread is not None and self._thread.is_alive()

    def write(self, state: dict[str, Any]) -> None:
        """Write ``state`` (after the write in flight, if any, has finished)."""
        self.wait()
        size = state_bytes(state)
        limit = BACKGROUND_BYTES if self._background_bytes is None else self._background_bytes
        if size <= limit:
            self._timed(state)
            return
        self._started(size)
        self._thread = threading.Thread(
            target=self._in_background, args=(state,), name="neuroplug-checkpoint", daemon=True
        )
        self._thread.start()

    def wait(self) -> None:
        """Until the write in flight is on disk; raises what it raised."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _timed(self, state: dict[str, Any]) -> None:
        started = time.perf_counter()
        try:
            self._write(state)
        finally:
            self._finished(time.perf_counter() - started)

    def _in_background(self, state: dict[str, Any]) -> None:
        try:
            self._timed(state)
        except BaseException as error:  # raised on the run's thread at the next wait
            self._error = error
