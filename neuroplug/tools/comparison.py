"""Groups of runs scored with statistics over seeds, for :mod:`.compare`.

The groups' runs are put on a grid of frames per task (interpolated, never extrapolated, up
to the shortest run's last frame), arranged as rliable arranges scores (``runs x tasks x
points``) and summarised by :mod:`.intervals`: IQM and mean of final and area-under-curve
scores, IQM curves, and the probability of improvement between every two groups, each with
its 95% stratified bootstrap interval (Agarwal et al. 2021).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from neuroplug.tools import intervals
from neuroplug.tools.runs import (
    NO_RUNS,
    Curve,
    differing_settings,
    not_logged,
    on_grid,
    points,
)

BY_ALGORITHM = ("algo.name",)
TASK = "env.task_id"
METRICS = ("eval_return_mean", "return_mean")
"""The default metric: the first every run logged (else the last)."""
GRID_POINTS = 100
"""Frames on a task's grid: where curves are drawn and the AUC averages."""
SCORES = ("final", "auc")
"""A run's scores: the metric at its task's last common frame, and its mean over them
(the area under its curve)."""
STATISTICS = {"iqm": intervals.iqm, "mean": intervals.mean}
"""What a group's scores are summarised by, each with its interval."""


@dataclass
class Run:
    """One run in a comparison: its record, group, task and seed, and its metric on its
    task's grid of frames, as logged (not normalised)."""

    curve: Curve
    group: str
    task: str
    seed: int | None
    values: np.ndarray = field(default_factory=lambda: np.array([]))


@dataclass
class Comparison:
    """Groups of runs on common frames, and what rliable makes of them."""

    metric: str
    by: tuple[str, ...]
    reps: int
    frames: dict[str, np.ndarray]
    """Each task's grid of frames."""
    runs: dict[str, list[Run]]
    """Each group's runs, task by task in :attr:`frames`' order, lowest seed first."""
    notes: list[str]
    """What was done to the runs that a reader needs to know (left out, normalised)."""
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    """Each group's ``runs x tasks x points`` matrix, normalised per task where several."""
    curves: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    """Each group's IQM per grid point, and its interval's low and high."""
    scores: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    """group -> :data:`SCORES` -> :data:`STATISTICS` -> ``value``, ``low``, ``high``."""
    improvement: list[dict] = field(default_factory=list)
    """P(x > y) of final scores, ``probability``, ``low``, ``high``, for every ordered pair."""

    @property
    def normalised(self) -> bool:
        """Whether scores are min-max normalised per task (there are several)."""
        return len(self.frames) > 1

    def final(self, group: str) -> np.ndarray:
        """The group's final scores, ``runs x tasks``."""
        return self.matrices[group][:, :, -1]

    def runs_per_task(self, group: str) -> int:
        """How many of the group's runs each task has."""
        return len(self.matrices[group])


def _metric(curves: list[Curve], metric: str | None) -> str:
    """``metric``, or the first of :data:`METRICS` every run logged; an error naming what
    they logged when none did."""
    if metric is None:
        metric = next((key for key in METRICS if all(_logged(c, key) for c in curves)), METRICS[-1])
    if not any(_logged(curve, metric) for curve in curves):
        raise not_logged(curves, metric)
    return metric


def _logged(curve: Curve, key: str) -> bool:
    return key in curve.columns and bool(np.isfinite(curve.columns[key]).any())


def _close_keys(key: str, keys: set[str]) -> str:
    close = difflib.get_close_matches(key, sorted(keys), n=6, cutoff=0.6)
    if close:
        return f"close keys: {', '.join(close)}"
    return f"their settings start with: {', '.join(sorted({k.split('.')[0] + '.' for k in keys}))}"


def _label(settings: dict[str, str], by: tuple[str, ...]) -> str:
    values = [settings.get(key, "unset") for key in by]
    if by == BY_ALGORITHM:
        return values[0]
    return " ".join(f"{key}={value}" for key, value in zip(by, values, strict=True))


def _seed(settings: dict[str, str]) -> int | None:
    try:
        return int(settings["run.seed"])
    except (KeyError, ValueError):
        return None


def _natural(text: str) -> list[tuple]:
    """Sort key: ``sigma=0.02`` before ``sigma=0.1``, ``2`` before ``10``."""
    parts = re.split(r"(-?\d+(?:\.\d+)?(?:e-?\d+)?)", text)
    return [(0, float(part), "") if k % 2 else (1, 0.0, part) for k, part in enumerate(parts)]


def _select(
    curves: list[Curve], by: tuple[str, ...], metric: str, notes: list[str]
) -> dict[str, dict[str, list[Run]]]:
    """group -> task -> runs, lowest seed first: the tasks every group ran, and in a group
    as many runs on each."""
    keys = {key for curve in curves for key in curve.settings}
    for key in by:
        if key not in keys:
            raise SystemExit(f"no run has the setting {key!r} (--by); {_close_keys(key, keys)}")
    silent = [str(curve.run_dir) for curve in curves if not _logged(curve, metric)]
    if silent:
        notes.append(f"left out, having logged no {metric}: {', '.join(silent)}")
    found: dict[str, dict[str, list[Run]]] = {}
    for curve in curves:
        if _logged(curve, metric):
            settings = curve.settings
            run = Run(curve, _label(settings, by), settings.get(TASK, "?"), _seed(settings))
            found.setdefault(run.group, {}).setdefault(run.task, []).append(run)
    common = sorted(set.intersection(*(set(tasks) for tasks in found.values())))
    if not common:
        ran = "; ".join(f"{group}: {', '.join(sorted(tasks))}" for group, tasks in found.items())
        raise SystemExit(f"no task ({TASK}) is common to every group: {ran}")
    selected = {}
    for group, tasks in sorted(found.items(), key=lambda item: _natural(item[0])):
        left_out = sorted(set(tasks) - set(common))
        if left_out:
            notes.append(
                f"{group}: left out its runs on {', '.join(left_out)}, not every group's task"
            )
        for runs in tasks.values():
            runs.sort(key=lambda run: (run.seed is None, run.seed or 0, str(run.curve.run_dir)))
        count = min(len(tasks[task]) for task in common)
        if count < 2:
            task = min(common, key=lambda task: len(tasks[task]))
            raise SystemExit(
                f"group {group!r} has 1 run on {task}: a 95% CI needs >= 2 runs per group "
                "(sweep the seed: run.seed=0,1,2,3,4)"
            )
        for task in common:
            if len(tasks[task]) > count:
                notes.append(
                    f"{group}: {len(tasks[task])} runs on {task}, of which the {count} lowest "
                    f"seeds ({[run.seed for run in tasks[task][:count]]}) are kept: as many as "
                    "on its other tasks"
                )
        selected[group] = {task: tasks[task][:count] for task in common}
        pooled = differing_settings([run.curve for task in common for run in tasks[task]])
        pooled -= {*by, TASK}
        if pooled:
            notes.append(
                f"{group}: pools runs that differ in {', '.join(sorted(pooled))} (see --by)"
            )
    return selected


def _align(runs: list[Run], metric: str) -> np.ndarray:
    """The runs' common grid of frames, from the last first frame to the first last frame at
    which they logged ``metric``; each run's values put on it."""
    logged = [points(run.curve, "frames", metric) for run in runs]
    start, end = max(x[0] for x, _ in logged), min(x[-1] for x, _ in logged)
    if start > end:
        raise SystemExit(
            f"the runs on {runs[0].task} logged {metric} at frames that do not overlap (one "
            f"up to frame {end:.0f}, another from {start:.0f} on): log it more often "
            "(run.eval_interval) or compare another metric (--y return_mean)"
        )
    frames = np.linspace(start, end, GRID_POINTS)
    for run, (x, y) in zip(runs, logged, strict=True):
        run.values = on_grid(x, y, frames)
    return frames


def _matrices(comparison: Comparison) -> dict[str, np.ndarray]:
    """Each group's ``runs x tasks x points``; with several tasks, each task's values
    min-max normalised over every group's runs (what the other tasks' scale says nothing of)."""
    tasks = list(comparison.frames)
    matrices = {
        group: np.array([run.values for run in runs]).reshape(len(tasks), -1, GRID_POINTS)
        for group, runs in comparison.runs.items()
    }
    if comparison.normalised:
        for task_index in range(len(tasks)):
            every = np.concatenate([matrix[task_index] for matrix in matrices.values()])
            low, span = every.min(), np.ptp(every) or 1.0
            for matrix in matrices.values():
                matrix[task_index] = (matrix[task_index] - low) / span
    return {group: matrix.transpose(1, 0, 2) for group, matrix in matrices.items()}


def compare(
    curves: list[Curve],
    by: tuple[str, ...] = BY_ALGORITHM,
    metric: str | None = None,
    reps: int = 2000,
) -> Comparison:
    """Group, align and score ``curves``; every interval is rliable's 95% stratified
    bootstrap over runs, ``reps`` resamples."""
    intervals.rliable()
    if not curves:
        raise SystemExit(NO_RUNS)
    metric = _metric(curves, metric)
    notes: list[str] = []
    selected = _select(curves, by, metric, notes)
    tasks = list(next(iter(selected.values())))
    frames = {
        task: _align([run for g in selected.values() for run in g[task]], metric) for task in tasks
    }
    runs = {group: [run for task in tasks for run in g[task]] for group, g in selected.items()}
    comparison = Comparison(metric, by, reps, frames, runs, notes)
    if comparison.normalised:
        notes.append(
            f"scores are min-max normalised per task over every run's {metric} on its frames "
            "(0: the lowest, 1: the highest)"
        )
    comparison.matrices = matrices = _matrices(comparison)
    scores = {
        "final": {group: comparison.final(group) for group in runs},
        "auc": {group: matrix.mean(axis=2) for group, matrix in matrices.items()},
    }
    for kind, by_group in scores.items():
        for name, statistic in STATISTICS.items():
            estimates = intervals.interval_estimates(by_group, statistic, reps)
            for group, (value, low, high) in estimates.items():
                summary = {"value": value[0], "low": low[0], "high": high[0]}
                comparison.scores.setdefault(group, {}).setdefault(kind, {})[name] = {
                    key: float(number) for key, number in summary.items()
                }
    comparison.curves = intervals.interval_estimates(matrices, intervals.iqm, reps)
    # P(y > x) is 1 - P(x > y) (ties count half), its interval the mirror of x's under the
    # same resamples: each pair is bootstrapped once.
    pairs = list(combinations(runs, 2))
    estimates = intervals.interval_estimates(
        {f"{x} > {y}": [scores["final"][x], scores["final"][y]] for x, y in pairs},
        intervals.probability_of_improvement,
        reps,
    )
    for x, y in pairs:
        value, low, high = (float(array[0]) for array in estimates[f"{x} > {y}"])
        comparison.improvement += [
            {"x": x, "y": y, "probability": value, "low": low, "high": high},
            {"x": y, "y": x, "probability": 1 - value, "low": 1 - high, "high": 1 - low},
        ]
    return comparison
