"""A learner's segment: sample and learn for ``segment_steps`` env steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuroplug.api import Learner
from neuroplug.loggers import MultiLogger
from neuroplug.training.components import Components
from neuroplug.training.loop import FamilyLoop, Progress, RunTables, Step


class LearnerLoop(FamilyLoop):
    """Segments of a :class:`~neuroplug.api.Learner`, which drives its own envs."""

    unit = "segment"

    def __init__(self, parts: Components, loggers: MultiLogger, run_dir: Path) -> None:
        self.learner: Learner = parts.algorithm
        self.run_dir = run_dir
        self.tables = RunTables(run_dir, self.unit)
        self.started_at: int | None = None
        """The segment this process started from (a resumed run's checkpoint)."""

    @property
    def completed(self) -> int:
        return self.learner.segments

    def describe(self) -> str:
        context = self.learner.context
        note = self.learner.describe()
        return (
            f"{self.learner.config.num_envs} envs (algo settings: {context.settings_source}"
            f"{'; ' + note if note else ''})"
        )

    def step(self, progress: Progress) -> Step:
        """One segment; its games are those that ended in it, however long they were."""
        self.learner.progress = progress
        if self.started_at is None:
            self.started_at = self.learner.segments
        before = self.learner.segments
        segment = self.learner.train_segment()
        self._check_counted(before)
        self.tables.write(segment.tables, self.started_at)
        return Step(
            env_steps=segment.env_steps,
            frames=segment.frames,
            forward_passes=segment.forward_passes,
            returns=np.asarray(segment.returns, dtype=np.float64),
            lengths=np.asarray(segment.lengths, dtype=np.int64),
            stats=segment.stats,
            timings=dict(segment.timings),
        )

    def _check_counted(self, before: int) -> None:
        """A learner's ``train_segment`` must count the segment it trained: a learner that
        does not would otherwise train forever."""
        if self.learner.segments != before + 1:
            name = type(self.learner).__name__
            raise RuntimeError(
                f"{name}.train_segment() moved Learner.segments from {before} to "
                f"{self.learner.segments}; it must add one per segment (Learner.segments)"
            )
