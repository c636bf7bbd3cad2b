"""A learner's segment: sample and learn for ``segment_steps`` env steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuroplug.api import Learner
from neuroplug.loggers import MultiLogger
from neuroplug.training.components import Components
from neuroplug.training.loop import FamilyLoop, Progress, Step


class LearnerLoop(FamilyLoop):
    """Segments of a :class:`~neuroplug.api.Learner`, which drives its own envs."""

    unit = "segment"

    def __init__(self, parts: Components, loggers: MultiLogger, run_dir: Path) -> None:
        self.learner: Learner = parts.algorithm

    def describe(self) -> str:
        context = self.learner.context
        return f"{self.learner.config.num_envs} envs (algo settings: {context.settings_source})"

    def step(self, progress: Progress) -> Step:
        """One segment; its games are those that ended in it, however long they were."""
        self.learner.progress = progress
        segment = self.learner.train_segment()
        return Step(
            env_steps=segment.env_steps,
            frames=segment.frames,
            forward_passes=segment.forward_passes,
            returns=np.asarray(segment.returns, dtype=np.float64),
            lengths=np.asarray(segment.lengths, dtype=np.int64),
            stats=segment.stats,
            timings=dict(segment.timings),
        )
