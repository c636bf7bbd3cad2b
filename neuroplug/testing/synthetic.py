"""Evaluation results without environments, for testing algorithms on synthetic fitness."""

from __future__ import annotations

import numpy as np

from neuroplug.api import EvaluationResult


def synthetic_result(fitness, episodes: int = 1, behaviours=None) -> EvaluationResult:
    """What a scheduler returns when every episode of member i scores ``fitness[i]``.

    ``behaviours``, if given, is ``(P, d)``: member i's behaviour in each of its episodes.
    Every episode counts as one step, frame and forward pass.
    """
    returns = np.repeat(np.asarray(fitness, dtype=np.float64).reshape(-1, 1), episodes, axis=1)
    if behaviours is not None:
        behaviours = np.repeat(np.asarray(behaviours, dtype=np.float64)[:, None], episodes, axis=1)
    return EvaluationResult(
        returns=returns,
        lengths=np.ones(returns.shape, dtype=np.int64),
        env_steps=returns.size,
        frames=returns.size,
        forward_passes=returns.size,
        behaviours=behaviours,
    )
