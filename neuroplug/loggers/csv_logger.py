"""The run's local record: one CSV row of metrics per generation (a learner's segment), in
the run dir.

Every run writes it, whatever loggers were chosen, so that ``python -m neuroplug.tools.plot`` works
on any run or sweep dir. Rows are appended as generations (segments) end; a column that appears later
(a learner's loss once learning starts, say) rewrites the file once with the wider header;
on resume, rows past the checkpoint are dropped so each one is there exactly once.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from neuroplug.loggers.base import Logger

METRICS_FILE = "metrics.csv"
"""The record's name in the run dir (next to ``checkpoints/``)."""


class CSVLogger(Logger):
    """Writes one row per unit; the header is every key seen so far, in first-seen order.
    ``unit`` names the column that counts the units (``generation`` or ``segment``)."""

    def __init__(self, path: Path, unit: str = "generation") -> None:
        self.path = path
        self.unit = unit
        self.fields: list[str] | None = None
        if path.is_file():
            with path.open(newline="") as stream:
                self.fields = next(csv.reader(stream), None)

    def log(self, metrics: dict[str, Any]) -> None:
        if self.fields is None:
            self.fields = list(metrics)
            self._rewrite([])
        elif any(key not in self.fields for key in metrics):
            self.fields += [key for key in metrics if key not in self.fields]
            self._rewrite(self._rows())
        with self.path.open("a", newline="") as stream:
            csv.DictWriter(stream, fieldnames=self.fields, restval="").writerow(metrics)

    def resumed(self, completed: int) -> None:
        """Drop rows past the checkpoint, so a resumed run logs each unit exactly once."""
        if not self.path.is_file():
            return
        rows = self._rows()
        kept = [row for row in rows if float(row[self.unit]) <= completed]
        if len(kept) != len(rows):
            self._rewrite(kept)

    def _rows(self) -> list[dict[str, str]]:
        with self.path.open(newline="") as stream:
            return list(csv.DictReader(stream))

    def _rewrite(self, rows: list[dict[str, str]]) -> None:
        """Replace the file at once (a crash leaves the old or the new one, never half)."""
        temporary = self.path.with_suffix(".csv.tmp")
        with temporary.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=self.fields or [], restval="")
            writer.writeheader()
            writer.writerows(rows)
        temporary.replace(self.path)
