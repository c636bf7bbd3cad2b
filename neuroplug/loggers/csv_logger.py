"""Metrics as rows of a CSV file in the run dir (appended to on resume, without duplicates)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from neuroplug.loggers.base import Logger


class CSVLogger(Logger):
    """Writes one row per generation; the header is the first row's keys."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fields: list[str] | None = None
        if path.is_file():
            with path.open(newline="") as stream:
                self.fields = next(csv.reader(stream), None)

    def log(self, metrics: dict[str, Any]) -> None:
        new_file = self.fields is None
        if new_file:
            self.fields = list(metrics)
        with self.path.open("a", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=self.fields, extrasaction="ignore")
            if new_file:
                writer.writeheader()
            writer.writerow(metrics)

    def resumed(self, generation: int) -> None:
        """Drop rows past the checkpoint, so a resumed run logs each generation exactly once."""
        if not self.path.is_file():
            return
        with self.path.open(newline="") as stream:
            rows = list(csv.DictReader(stream))
        kept = [row for row in rows if float(row["generation"]) <= generation]
        if len(kept) == len(rows):
            return
        temporary = self.path.with_suffix(".csv.tmp")
        with temporary.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=self.fields)
            writer.writeheader()
            writer.writerows(kept)
        temporary.replace(self.path)
