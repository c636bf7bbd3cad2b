"""Learning curves from local logs: ``python -m neuroplug.tools.plot <run or sweep dir>...``.

Reads every ``metrics.csv`` (each run writes one in its run dir) below the given directories
and each run's config (``config.yaml``). Runs are grouped by every setting that differs
between them (a sweep's overrides: ``algo.sigma=0.01`` and ``algo.sigma=0.02`` are two
curves), except the seed: runs that differ only in ``run.seed`` are one curve, the mean over
them with a band from the lowest to the highest seed. Each curve is labelled with its
algorithm, task and differing settings, and drawn to its own end (where only some seeds
reached, the mean is over those). A metric logged on some rows only
(``--y eval_return_mean``) is drawn through the rows that have it. Return is drawn against
frames and against wall time into one PNG. A population's run (``algo=pbt``) also gets
``<run dir>/population.png``: each member's objective and settings against frames. W&B is
not needed. Needs matplotlib
(``pip install neuroplug[plot]``).
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

X_AXES = {"frames": "emulator frames", "elapsed": "wall time (s)"}

IDENTITY = ("algo.name", "env.task_id")
"""Settings every label starts with: ``<algo> on <task>``."""
NOT_A_SETTING = ("run.seed", "run.output_dir", "run.resume", "logger.")
"""Keys (or prefixes) that never split runs into curves: seeds make the band; where a run
wrote and how it logged do not change what it learned."""


@dataclass
class Curve:
    """One run's logged metrics as columns of floats, and its settings."""

    label: str
    run_dir: Path
    columns: dict[str, np.ndarray]
    settings: dict[str, str] = field(default_factory=dict)
    """The run's config flattened to ``dotted.key -> value`` (empty when it has none)."""


def _settings(run_dir: Path) -> dict[str, str]:
    """The run's config record, flattened (``{"algo.sigma": "0.02", ...}``)."""
    for record in (run_dir / "config.yaml", run_dir / ".hydra" / "config.yaml"):
        if record.is_file():
            from omegaconf import OmegaConf

            return _flatten(OmegaConf.to_container(OmegaConf.load(record), resolve=False))
    return {}


def _flatten(node, prefix: str = "") -> dict[str, str]:
    if isinstance(node, dict):
        flat: dict[str, str] = {}
        for key, value in node.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
        return flat
    return {prefix[:-1]: str(node)}


def _is_setting(key: str) -> bool:
    return not any(key == skip or key.startswith(skip) for skip in NOT_A_SETTING if skip)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def load_curves(directories: list[Path]) -> list[Curve]:
    """Every run with a ``metrics.csv`` below ``directories``, labelled by :func:`group_runs`."""
    curves = []
    for directory in directories:
        for path in sorted(Path(directory).rglob("metrics.csv")):
            with path.open(newline="") as stream:
                rows = list(csv.DictReader(stream))
            if not rows:
                continue
            columns = {
                key: np.array([_number(row.get(key, "")) for row in rows]) for key in rows[0]
            }
            curves.append(Curve(path.parent.name, path.parent, columns, _settings(path.parent)))
    group_runs(curves)
    return curves


def group_runs(curves: list[Curve]) -> dict[str, list[Curve]]:
    """Label every curve by what tells its group apart, and return the groups by label.

    A setting splits runs when runs of the same algorithm and task take different values of
    it, each run having one (what differs only because the algorithm differs, such as GA's truncation beside
    ES, is implied by the algorithm's name)."""
    by_identity: dict[tuple[str, ...], list[Curve]] = defaultdict(list)
    for curve in curves:
        by_identity[tuple(curve.settings.get(key, "") for key in IDENTITY)].append(curve)
    differing: set[str] = set()
    for members in by_identity.values():
        keys = {key for curve in members for key in curve.settings if _is_setting(key)}
        for key in keys - set(IDENTITY):
            # A setting some runs lack came with another version of the config (an older
            # run's): it tells nothing apart.
            held = [curve.settings[key] for curve in members if key in curve.settings]
            if len(held) == len(members) and len(set(held)) > 1:
                differing.add(key)
    groups: dict[str, list[Curve]] = defaultdict(list)
    for curve in curves:
        algo, task = (curve.settings.get(key) for key in IDENTITY)
        if algo and task:
            overrides = [
                f"{key}={curve.settings[key]}" for key in sorted(differing) if key in curve.settings
            ]
            curve.label = f"{algo} on {task}" + (f" {' '.join(overrides)}" if overrides else "")
        groups[curve.label].append(curve)
    return dict(groups)


def _points(curve: Curve, x_key: str, y_key: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows where both x and y were logged (a sparse metric keeps its own rows)."""
    x, y = curve.columns[x_key], curve.columns[y_key]
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def _band(curves: list[Curve], x_key: str, y_key: str) -> tuple[np.ndarray, ...]:
    """Mean, min and max over the runs on an x grid from the first run's start to the last
    run's end: at each x, over the runs that reached it (interpolated, never extrapolated)."""
    runs = [
        points for points in (_points(curve, x_key, y_key) for curve in curves) if len(points[0])
    ]
    if not runs:
        return (np.array([]),) * 4
    start, end = min(x[0] for x, _ in runs), max(x[-1] for x, _ in runs)
    # Every run's own end is on the grid, so each is drawn exactly to where it stopped.
    grid = np.array(sorted({float(x[-1]) for x, _ in runs} | set(np.linspace(start, end, 200))))
    values = np.full((len(runs), len(grid)), np.nan)
    for row, (x, y) in enumerate(runs):
        covered = (grid >= x[0]) & (grid <= x[-1])
        values[row, covered] = np.interp(grid[covered], x, y)
    reached = np.isfinite(values).any(axis=0)
    grid, values = grid[reached], values[:, reached]
    return grid, np.nanmean(values, axis=0), np.nanmin(values, axis=0), np.nanmax(values, axis=0)


def plot_curves(curves: list[Curve], output: Path, y_key: str = "return_mean") -> Path:
    """Draw ``y_key`` vs frames and vs wall time for each group of runs into ``output``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not curves:
        raise SystemExit(
            "no metrics.csv below the given directories: give run dirs or sweep dirs "
            "(each run writes <run dir>/metrics.csv from its first generation on)"
        )
    groups = {
        label: [curve for curve in members if y_key in curve.columns]
        for label, members in group_runs(curves).items()
    }
    groups = {label: members for label, members in groups.items() if members}
    if not groups:
        logged = sorted({key for curve in curves for key in curve.columns})
        raise SystemExit(
            f"no run below the given directories logged {y_key!r} (--y); "
            f"they logged: {', '.join(logged)}"
        )
    figure, axes = plt.subplots(1, len(X_AXES), figsize=(6 * len(X_AXES), 4.2))
    for axis, (x_key, x_label) in zip(axes, X_AXES.items(), strict=True):
        for label, members in sorted(groups.items()):
            runs = f"{len(members)} seed{'s' * (len(members) > 1)}"
            if len(members) == 1:
                x, y = _points(members[0], x_key, y_key)
                sparse = len(x) < len(members[0].columns[x_key])
                axis.plot(x, y, marker="o" if sparse else None, ms=3, label=f"{label} ({runs})")
                continue
            grid, mean, low, high = _band(members, x_key, y_key)
            (line,) = axis.plot(grid, mean, label=f"{label} (mean of {runs})")
            axis.fill_between(grid, low, high, color=line.get_color(), alpha=0.2)
        axis.set_xlabel(x_label)
        axis.set_ylabel(y_key.replace("_", " "))
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
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
    names = ["objective", *sorted(name for name in series if name != "objective")]
    names = [name for name in names if name in series]
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
