"""What the trainer drives: one loop per family, behind one small interface.

The trainer owns everything the families share — budgets, evaluation of the deployed
policy, checkpoints, stop signals, loggers — and asks a :class:`FamilyLoop` for one unit of
training at a time: an evolutionary algorithm's generation
(:mod:`neuroplug.training.evolution_loop`) or a learner's segment
(:mod:`neuroplug.training.learner_loop`). Which loop a run gets is decided once, by the
kind its ``algo`` plugin was registered as.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neuroplug.api import Segment
from neuroplug.loggers.csv_logger import CSVLogger

Progress = Callable[[dict[str, Any]], None]
"""Where the running unit stands, for the loggers (see :meth:`neuroplug.loggers.Logger.progress`)."""


@dataclass
class Step(Segment):
    """What one generation or segment did: a :class:`~neuroplug.api.Segment`'s honest
    counters, games, stats and timings (a generation's games are its main round's), plus
    anything else to log as it is (``scheduler/...``, ``evaluation_rounds``)."""

    metrics: dict[str, Any] = field(default_factory=dict)


class RunTables:
    """The run's own tables, ``<run dir>/<name>.csv`` (the self-play tournament table): rows
    a unit appends, numbered by units completed as ``metrics.csv`` is."""

    def __init__(self, run_dir: Path, unit: str) -> None:
        self.run_dir = run_dir
        self.unit = unit
        self.tables: dict[str, CSVLogger] = {}

    def write(self, tables: dict[str, list[dict]], started_at: int) -> None:
        """Append each table's rows; the first time a table is written in this process,
        rows past ``started_at`` (the units a resumed run's checkpoint held) are dropped
        first: a run that died wrote them after its last checkpoint."""
        for name, rows in tables.items():
            table = self.tables.get(name)
            if table is None:
                table = self.tables[name] = CSVLogger(self.run_dir / f"{name}.csv", self.unit)
                table.resumed(started_at)
            for row in rows:
                table.log(row)


class FamilyLoop(ABC):
    """One unit of training at a time, for one family of ``algo`` plugins."""

    unit: str = "generation"
    """What one unit is called in lines and messages."""

    @property
    @abstractmethod
    def completed(self) -> int:
        """Units completed so far (a resumed run's count includes its checkpoint's)."""

    @abstractmethod
    def describe(self) -> str:
        """How big the unit's work is, for the start-up line (``population 64``)."""

    @abstractmethod
    def step(self, progress: Progress) -> Step:
        """Train one unit, telling ``progress`` where it stands now and then."""

    def state_dict(self) -> dict:
        """What the loop itself keeps across units, for checkpoints (most keep nothing)."""
        return {}

    def load_state_dict(self, state: dict) -> None:  # noqa: B027 - optional hook
        """Restore :meth:`state_dict`."""
