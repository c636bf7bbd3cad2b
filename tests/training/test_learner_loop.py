"""The learner loop's checks on what a learner reports."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from neuroplug.api import Segment
from neuroplug.training.learner_loop import LearnerLoop


class _CountsGenerations:
    """A learner written for contract 4: it counts its segments as ``generation``."""

    segments = 0
    generation = 0

    def train_segment(self) -> Segment:
        self.generation += 1
        return Segment(0, 0, 0, np.zeros(0), np.zeros(0, dtype=np.int64))


def test_a_learner_that_does_not_count_its_segment_is_stopped_naming_the_counter(tmp_path):
    loop = LearnerLoop(SimpleNamespace(algorithm=_CountsGenerations()), None, tmp_path)
    with pytest.raises(
        RuntimeError, match=r"moved Learner\.segments from 0 to 0; it must add one per segment"
    ):
        loop.step(lambda state: None)
