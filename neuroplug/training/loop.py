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
from typing import Any

from neuroplug.api import Segment

Progress = Callable[[dict[str, Any]], None]
"""Where the running unit stands, for the loggers (see :meth:`neuroplug.loggers.Logger.progress`)."""


@dataclass
class Step(Segment):
    """What one generation or segment did: a :class:`~neuroplug.api.Segment`'s honest
    counters, games, stats and timings (a generation's games are its main round's), plus
    anything else to log as it is (``scheduler/...``, ``evaluation_rounds``)."""

    metrics: dict[str, Any] = field(default_factory=dict)


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
