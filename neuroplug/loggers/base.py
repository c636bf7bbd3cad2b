"""The logger interface and the fan-out to several loggers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


class Logger:
    """Receives one dict of metrics per unit of training: an evolutionary algorithm's
    generation, a learner's segment (the run's ``unit``)."""

    def log(self, metrics: dict[str, Any]) -> None:
        """Record the metrics of one unit (``metrics[unit]``, ``generation`` or ``segment``,
        is the number of units done)."""

    def message(self, text: str) -> None:
        """A one-off line for the user (start, evaluation, resume, stop)."""

    def progress(self, state: dict[str, Any]) -> None:
        """Where the running phase stands (called a few times a second at most): ``phase``
        (``generation``, ``evaluation`` or a learner's ``segment``), the run's unit (``generation``
        or ``segment``: the one running, from 1), ``episodes_done`` and ``frames`` (the run's, so far); a generation
        and an evaluation add ``episodes_total``; a segment adds ``env_steps`` and
        ``segment_steps`` (its own, done and planned), ``frames_per_second`` and
        ``recent_return`` (the mean of its last finished games, NaN before the first)."""

    def artifact(self, path: Path, name: str, kind: str) -> None:
        """A file worth keeping with the run (a checkpoint, the best policy)."""

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        """Rows worth reading at unit ``step`` (a text task's sample completions)."""

    def resumed(self, completed: int) -> None:
        """The run continues from a checkpoint after ``completed`` units: anything logged for
        later ones (by a run that crashed after logging but before checkpointing) is stale."""

    def close(self, status: str = "finished") -> None:
        """Flush and release resources; ``status`` is finished, interrupted or failed."""


class MultiLogger(Logger):
    """Sends everything to several loggers; one failing never stops training."""

    def __init__(self, loggers: list[Logger]) -> None:
        self.loggers = loggers
        self._failed: set[int] = set()

    def _each(self, method: str, *args: Any) -> None:
        for index, logger in enumerate(self.loggers):
            try:
                getattr(logger, method)(*args)
            except Exception as error:  # a logger problem must never end a run
                if index not in self._failed:
                    self._failed.add(index)
                    print(
                        f"neuroplug: logger {type(logger).__name__} failed ({error}); training goes on",
                        file=sys.stderr,
                    )

    def log(self, metrics: dict[str, Any]) -> None:
        self._each("log", metrics)

    def message(self, text: str) -> None:
        self._each("message", text)

    def progress(self, state: dict[str, Any]) -> None:
        self._each("progress", state)

    def artifact(self, path: Path, name: str, kind: str) -> None:
        self._each("artifact", path, name, kind)

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self._each("table", name, columns, rows, step)

    def resumed(self, completed: int) -> None:
        self._each("resumed", completed)

    def close(self, status: str = "finished") -> None:
        self._each("close", status)
