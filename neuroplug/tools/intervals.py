"""Confidence intervals over runs: rliable's stratified bootstrap (Agarwal et al. 2021,
"Deep RL at the edge of the statistical precipice", NeurIPS), the one place
:mod:`.plot`'s bands and :mod:`.compare`'s scores get theirs.

Scores are arranged as rliable arranges them: ``runs x tasks`` (a final score), or
``runs x tasks x points`` (a curve on a grid of frames), and a statistic reduces runs and
tasks to one value (per point). Needs ``rliable`` (``pip install neuroplug[compare]``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType

import numpy as np

CONFIDENCE = 0.95
SEED = 0
"""The bootstrap's seed: the same runs give the same intervals."""
INSTALL = "pip install neuroplug[compare]"

Scores = np.ndarray | list[np.ndarray]
"""A ``runs x tasks (x points)`` matrix, or a list of them for a statistic of several
(:func:`probability_of_improvement`: one group's scores, then the other's)."""


class RliableMissing(SystemExit):
    """rliable does not import: the one line saying what to install."""


def rliable() -> tuple[ModuleType, ModuleType]:
    """rliable's ``library`` and ``metrics`` modules."""
    try:
        from rliable import library, metrics
    except (ImportError, AttributeError) as error:  # pandas>=3 breaks arch's import
        raise RliableMissing(
            f"rliable does not import ({error}): {INSTALL} (rliable, with the pandas<3 its "
            "arch dependency needs)"
        ) from None
    return library, metrics


@contextlib.contextmanager
def _seeded() -> Iterator[None]:
    # rliable's bootstrap draws its resamples from NumPy's global generator
    # (np.random.choice), whatever random_state it is given: seed that for the call, and
    # give the caller's state back.
    state = np.random.get_state()
    np.random.seed(SEED)
    try:
        yield
    finally:
        np.random.set_state(state)


def interval_estimates(
    scores: Mapping[str, Scores], statistic: Callable[..., np.ndarray], reps: int
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``statistic`` of each entry's scores with its 95% stratified bootstrap interval
    (runs resampled within each task, ``reps`` times): key -> (point, low, high), each an
    array with one value per point (one for a final score)."""
    library, _ = rliable()
    with _seeded():
        point, interval = library.get_interval_estimates(
            dict(scores), func=statistic, reps=reps, confidence_interval_size=CONFIDENCE
        )
    return {key: (np.atleast_1d(point[key]), *np.reshape(interval[key], (2, -1))) for key in scores}


def _runs_and_tasks(scores: np.ndarray) -> np.ndarray:
    """``runs x tasks (x points)`` as ``(runs * tasks) x points``."""
    return scores.reshape(scores.shape[0] * scores.shape[1], -1)


def iqm(scores: np.ndarray) -> np.ndarray:
    """The interquartile mean over runs and tasks, per point: rliable's ``aggregate_iqm``
    (scipy's ``trim_mean``, a quarter cut from each end) written out, as scipy checks its
    input on every call, 30 times the cost of the sort, and the bootstrap calls it
    thousands of times."""
    flat = np.sort(_runs_and_tasks(scores), axis=0)
    cut = int(0.25 * len(flat))
    return flat[cut : len(flat) - cut].mean(axis=0)


def mean(scores: np.ndarray) -> np.ndarray:
    """The mean over runs and tasks, per point (rliable's ``aggregate_mean``: the tasks'
    means averaged, the same thing where every task has as many runs)."""
    return _runs_and_tasks(scores).mean(axis=0)


def probability_of_improvement(scores_x: np.ndarray, scores_y: np.ndarray) -> np.ndarray:
    """P(X > Y): the chance a run of X beats a run of Y on a task (ties count half),
    averaged over tasks (rliable's ``probability_of_improvement``)."""
    _, metrics = rliable()
    return np.atleast_1d(metrics.probability_of_improvement(scores_x, scores_y))


def _score_distribution(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """The fraction of runs (over tasks) scoring above each threshold: rliable's score
    distribution (its ``run_score_deviation``, vectorised over the thresholds)."""
    return (scores.reshape(-1, 1) > thresholds[None, :]).mean(axis=0)


def performance_profiles(
    scores: Mapping[str, np.ndarray], thresholds: np.ndarray, reps: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each entry's score distribution over ``thresholds`` and its 95% interval as
    ``2 x thresholds`` (rliable's ``create_performance_profile``)."""
    library, _ = rliable()
    with _seeded():
        return library.create_performance_profile(
            dict(scores),
            thresholds,
            custom_profile_func=_score_distribution,
            reps=reps,
            confidence_interval_size=CONFIDENCE,
        )
