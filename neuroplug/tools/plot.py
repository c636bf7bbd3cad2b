"""Learning curves from local logs: ``python -m neuroplug.tools.plot <run or sweep dir>...``.

Reads every ``metrics.csv`` (each run writes one in its run dir) below the given directories
and each run's config (``config.yaml``), through :mod:`.runs`. Runs are grouped by every
setting that differs between them (a sweep's overrides: ``algo.sigma=0.01`` and
``algo.sigma=0.02`` are two curves), except the seed: runs that differ only in ``run.seed``
are one curve, the mean over them with the 95% bootstrap confidence interval of that mean
as its band (:mod:`.intervals`, with rliable; without it the mean alone). Each curve is
labelled with its algorithm, task and differing settings, and drawn to its own end (where
only some seeds reached, the mean and its interval are over those; where one is left, there
is no band). A metric logged on some rows only (``--y eval_return_mean``) is drawn through
the rows that have it, with markers. Return is drawn against frames and against wall time
into one PNG. A population's run (``algo=pbt``) also gets ``<run dir>/population.png``: each
member's objective and settings against frames. W&B is not needed. Needs matplotlib and
rliable (``pip install neuroplug[plot]``); :mod:`.compare` tells groups apart with
statistics.
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np

from neuroplug.tools import intervals
from neuroplug.tools.runs import (
    NO_RUNS,
    Curve,
    group_runs,
    is_sparse,
    load_curves,
    not_logged,
    on_grid,
    points,
)

X_AXES = {"frames": "emulator frames", "elapsed": "wall time (s)"}
BAND_REPS = 2000
"""Bootstrap resamples behind a band."""


def _grid_values(curves: list[Curve], x_key: str, y_key: str) -> tuple[np.ndarray, np.ndarray]:
    """An x grid from the first run's start to the last run's end, and each run's ``y_key``
    on it (``runs x grid``, NaN where a run did not reach). A sparse metric's grid is the x
    of every logged point; a dense one's, 200 points."""
    runs = [xy for xy in (points(curve, x_key, y_key) for curve in curves) if len(xy[0])]
    if not runs:
        return np.array([]), np.zeros((0, 0))
    start, end = min(x[0] for x, _ in runs), max(x[-1] for x, _ in runs)
    if any(is_sparse(curve, y_key) for curve in curves):
        grid = np.unique(np.concatenate([x for x, _ in runs]))
    else:
        # Every run's own end is on the grid, so each is drawn exactly to where it stopped.
        ends = {float(x[-1]) for x, _ in runs}
        grid = np.array(sorted(ends | set(np.linspace(start, end, 200))))
    return grid, np.array([on_grid(x, y, grid) for x, y in runs])


def _mean_band(values: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
    """The mean over runs (``runs x grid``, NaN where a run did not reach) and its 95%
    bootstrap interval where at least two runs reached (NaN elsewhere, and everywhere when
    ``reps`` is 0)."""
    reached = np.isfinite(values)
    with warnings.catch_warnings():  # a column no run reached stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=0)
    low, high = np.full(len(mean), np.nan), np.full(len(mean), np.nan)
    if not reps:
        return mean, low, high
    # Columns the same runs reached are one runs x columns matrix, bootstrapped together.
    columns_by_runs: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for column in range(values.shape[1]):
        runs = tuple(np.flatnonzero(reached[:, column]))
        if len(runs) > 1:
            columns_by_runs[runs].append(column)
    matrices = {
        str(key): values[np.ix_(runs, columns)][:, None, :]
        for key, (runs, columns) in enumerate(columns_by_runs.items())
    }
    estimates = intervals.interval_estimates(matrices, intervals.mean, reps)
    for key, columns in enumerate(columns_by_runs.values()):
        _, low[columns], high[columns] = estimates[str(key)]
    return mean, low, high


def _band(
    curves: list[Curve], x_key: str, y_key: str, reps: int = BAND_REPS
) -> tuple[np.ndarray, ...]:
    """Grid, mean and its interval's low and high over the runs (:func:`_mean_band`)."""
    grid, values = _grid_values(curves, x_key, y_key)
    if not len(grid):
        return (np.array([]),) * 4
    reached = np.isfinite(values).any(axis=0)
    return grid[reached], *_mean_band(values[:, reached], reps)


def _mean_seconds(curves: list[Curve], frames: np.ndarray) -> np.ndarray:
    """The seeds' mean wall time at each of ``frames``: where the wall-time panel draws a
    group's mean at those frames.

    Seeds log at their own times, so a grid of seconds would meet each seed at a different
    point of its training, and the mean jumped where a seed stopped: the group is taken at
    equal frames instead. A seed counts the time it took to reach them; one that stopped
    before counts the time it took in all (it spends no more), one that has not logged yet
    the time since its start (0 frames at 0 s). Each seed's time so counted never
    decreases with frames, so neither does the mean: the line never turns back."""
    seconds = [
        np.interp(frames, np.r_[0.0, x], np.r_[0.0, elapsed])
        for x, elapsed in (points(curve, "frames", "elapsed") for curve in curves)
    ]
    return np.mean(seconds, axis=0)


def _rliable_reps() -> int:
    """:data:`BAND_REPS` where rliable imports; else 0 (no band), said once on stderr."""
    try:
        intervals.rliable()
    except intervals.RliableMissing as missing:
        print(f"neuroplug.tools.plot: drawing means without bands: {missing}", file=sys.stderr)
        return 0
    return BAND_REPS


def plot_curves(curves: list[Curve], output: Path, y_key: str = "return_mean") -> Path:
    """Draw ``y_key`` vs frames and vs wall time for each group of runs into ``output``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not curves:
        raise SystemExit(NO_RUNS)
    groups = {
        label: [curve for curve in members if y_key in curve.columns]
        for label, members in group_runs(curves).items()
    }
    groups = {label: members for label, members in groups.items() if members}
    if not groups:
        raise not_logged(curves, y_key)
    reps = _rliable_reps() if any(len(members) > 1 for members in groups.values()) else 0
    figure, (by_frames, by_time) = plt.subplots(1, len(X_AXES), figsize=(6 * len(X_AXES), 4.2))
    for label, members in sorted(groups.items()):
        style = {"marker": "o", "ms": 3} if any(is_sparse(c, y_key) for c in members) else {}
        if len(members) == 1:
            (line,) = by_frames.plot(*points(members[0], "frames", y_key), **style)
            line.set_label(f"{label} (1 seed)")
            by_time.plot(*points(members[0], "elapsed", y_key), color=line.get_color(), **style)
            continue
        seeds = f"{len(members)} seeds"
        summary = f"mean, 95% CI over {seeds}" if reps else f"mean of {seeds}"
        frames, mean, low, high = _band(members, "frames", y_key, reps)
        (line,) = by_frames.plot(frames, mean, label=f"{label} ({summary})", **style)
        by_frames.fill_between(frames, low, high, color=line.get_color(), alpha=0.2, lw=0)
        seconds = _mean_seconds(members, frames)
        by_time.plot(seconds, mean, color=line.get_color(), **style)
        by_time.fill_between(seconds, low, high, color=line.get_color(), alpha=0.2, lw=0)
    for axis, (x_key, x_label) in zip((by_frames, by_time), X_AXES.items(), strict=True):
        axis.set_xlabel(x_label if x_key == "frames" else f"{x_label}, seeds' mean at equal frames")
        axis.set_ylabel(y_key.replace("_", " "))
        axis.grid(alpha=0.3)
    by_frames.legend(fontsize=7)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)
    plt.close(figure)
    return output


MEMBER_COLUMN = re.compile(r"^algo/member(\d+)/(.+)$")
"""A population member's column (``algo=pbt``): ``algo/member<k>/<objective or setting>``."""


def member_series(curve: Curve) -> dict[str, dict[int, np.ndarray]]:
    """A population run's per-member columns: name -> member -> values (empty for a run of
    one learner)."""
    series: dict[str, dict[int, np.ndarray]] = defaultdict(dict)
    for key, values in curve.columns.items():
        match = MEMBER_COLUMN.match(key)
        if match:
            series[match.group(2)][int(match.group(1))] = values
    return dict(series)


def plot_population(curve: Curve, output: Path) -> Path:
    """Each member's objective and each of its settings against frames, one panel each:
    the population's curves and its hyperparameter schedules."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = member_series(curve)
    # The objectives first (a policy per team: each policy's), then the settings.
    names = sorted(series, key=lambda name: (not name.endswith("objective"), name))
    columns = min(3, len(names))
    rows = -(-len(names) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False)
    frames = curve.columns["frames"]
    for axis in axes.flat[len(names) :]:
        axis.set_visible(False)
    for axis, name in zip(axes.flat, names, strict=False):
        positive = []
        for member, values in sorted(series[name].items()):
            keep = np.isfinite(values)
            axis.plot(frames[keep], values[keep], label=f"member {member}", lw=1)
            positive.extend(values[keep & (values > 0)].tolist())
        low = min(positive, default=0.0)
        if name != "objective" and low > 0 and max(positive) / low > 10:
            axis.set_yscale("log")  # rates spread over decades
        axis.set_title(name.replace("_", " "), fontsize=9)
        axis.set_xlabel("emulator frames (all members)")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6)
    figure.suptitle(curve.label, fontsize=9)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)
    return output


def archive_of(run_dir: Path) -> dict | None:
    """The quality-diversity archive in ``run_dir``'s checkpoint, or None for a run without
    one (:func:`neuroplug.training.checkpoint.archive_of`)."""
    from neuroplug.training import checkpoint

    return checkpoint.archive_of(run_dir)


def plot_archive(archive: dict, output: Path, title: str = "") -> Path:
    """The archive as a heat map of its elites' fitness: a grid's cells (one or two
    descriptor dimensions; more are shown over the first two), or a CVT archive's elites
    at their descriptors (the first two dimensions)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bounds = np.asarray(archive["bounds"], dtype=float)
    fitness = np.asarray(archive["fitness"], dtype=float)
    figure, axis = plt.subplots(figsize=(6, 4.5))
    if "shape" in archive:
        shape = tuple(int(size) for size in archive["shape"])
        grid = np.full(int(np.prod(shape)), np.nan)
        grid[np.asarray(archive["cells"], dtype=np.int64)] = fitness
        grid = grid.reshape(shape)
        if grid.ndim == 1:
            grid = grid[None, :]
            extent = (*bounds[0], 0, 1)
        else:
            with warnings.catch_warnings():  # cells whose column is empty stay blank
                warnings.simplefilter("ignore", RuntimeWarning)
                grid = np.nanmax(grid.reshape(shape[0], shape[1], -1), axis=2).T
            extent = (*bounds[0], *bounds[1])
        image = axis.imshow(grid, origin="lower", extent=extent, aspect="auto", cmap="viridis")
    else:
        descriptors = np.asarray(archive["descriptors"], dtype=float)
        second = descriptors[:, 1] if descriptors.shape[1] > 1 else np.zeros(len(descriptors))
        image = axis.scatter(descriptors[:, 0], second, c=fitness, cmap="viridis", s=12)
        axis.set_xlim(*bounds[0])
        if descriptors.shape[1] > 1:
            axis.set_ylim(*bounds[1])
    figure.colorbar(image, ax=axis, label="elite fitness")
    # An archive built without a task (synthetic descriptors) has no dimension names.
    names = list(archive.get("names") or [f"descriptor {k}" for k in range(len(bounds))])
    axis.set_xlabel(names[0])
    axis.set_ylabel(names[1] if len(bounds) > 1 else "")
    coverage = len(fitness) / int(archive["size"])
    summary = f"{len(fitness)} elites, coverage {coverage:.0%}"
    axis.set_title(f"{title}: {summary}" if title else summary, fontsize=9)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=110)
    plt.close(figure)
    return output


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.plot``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.plot", description=__doc__.splitlines()[0]
    )
    parser.add_argument("directories", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument(
        "--out", type=Path, default=None, help="PNG to write (default: <first dir>/curves.png)"
    )
    parser.add_argument(
        "--y", default="return_mean", help="metric to plot (e.g. eval_return_mean, return_max)"
    )
    arguments = parser.parse_args(argv)
    missing = [str(path) for path in arguments.directories if not path.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    output = arguments.out or arguments.directories[0] / "curves.png"
    curves = load_curves(arguments.directories)
    print(plot_curves(curves, output, arguments.y))
    for curve in curves:  # a population's members and their settings, beside each such run
        if member_series(curve):
            print(plot_population(curve, curve.run_dir / "population.png"))
        archive = archive_of(curve.run_dir) if (curve.run_dir / "checkpoints").is_dir() else None
        if archive is not None:  # a quality-diversity run: its archive, beside it
            print(plot_archive(archive, curve.run_dir / "archive.png", curve.label))


if __name__ == "__main__":
    main()
