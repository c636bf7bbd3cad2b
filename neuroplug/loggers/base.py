"""The logger interface and the fan-out to several loggers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


class Logger:
    """Receives one dict of metrics per generation."""

    def log(self, metrics: dict[str, Any]) -> None:
        """Record the metrics of one generation (``metrics["generation"]`` is set)."""

    def message(self, text: str) -> None:
        """A one-off line for the user (start, evaluation, resume, stop)."""

    def close(self) -> None:
        """Flush and release resources."""


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

    def close(self) -> None:
        self._each("close")


def build_loggers(kinds: list[str], run_dir: Path, budget: dict[str, int | None]) -> MultiLogger:
    """The loggers named in ``logger.kinds``."""
    from neuroplug.loggers.console import ConsoleLogger
    from neuroplug.loggers.csv_logger import CSVLogger

    loggers: list[Logger] = []
    for kind in kinds:
        if kind == "console":
            loggers.append(ConsoleLogger(budget))
        elif kind == "csv":
            loggers.append(CSVLogger(Path(run_dir) / "metrics.csv"))
    return MultiLogger(loggers)
