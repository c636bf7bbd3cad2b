"""Learning curves from local logs: ``python -m neuroplug.plot <run or sweep dir>...``.

Reads every ``metrics.csv`` (each run writes one in its run dir) below the given directories,
groups runs by algorithm and environment (from each run's ``.hydra/config.yaml``), and
draws return against frames and against wall time — the mean over seeds with a band from
the lowest to the highest seed — into one PNG. W&B is not needed. Needs matplotlib
(``pip install neuroplug[plot]``).
"""

from __future__ import annotations

import argparse
import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

X_AXES = {"frames": "emulator frames", "elapsed": "wall time (s)"}


@dataclass
class Curve:
    """One run's logged metrics as columns of floats."""

    label: str
    run_dir: Path
    columns: dict[str, np.ndarray]


def _label(run_dir: Path) -> str:
    """``algo on env`` from the run's config record, else the directory name."""
    for record in (run_dir / "config.yaml", run_dir / ".hydra" / "config.yaml"):
        if not record.is_file():
            continue
        from omegaconf import OmegaConf

        config = OmegaConf.load(record)
        algo = OmegaConf.select(config, "algo.name", default=None)
        task = OmegaConf.select(config, "env.task_id", default=None)
        if algo and task:
            return f"{algo} on {task}"
    return run_dir.name


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def load_curves(directories: list[Path]) -> list[Curve]:
    """Every run with a ``metrics.csv`` below ``directories``."""
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
            curves.append(Curve(_label(path.parent), path.parent, columns))
    return curves


def _band(curves: list[Curve], x_key: str, y_key: str) -> tuple[np.ndarray, ...]:
    """Mean, min and max over runs on a common x grid (each run interpolated, no extrapolation)."""
    finite = []
    for curve in curves:
        x, y = curve.columns[x_key], curve.columns[y_key]
        keep = np.isfinite(x) & np.isfinite(y)
        if keep.sum() >= 1:
            finite.append((x[keep], y[keep]))
    end = min(x[-1] for x, _ in finite)
    grid = np.linspace(min(x[0] for x, _ in finite), end, 100) if end > 0 else np.array([0.0])
    values = np.stack([np.interp(grid, x, y) for x, y in finite])
    return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def plot_curves(curves: list[Curve], output: Path, y_key: str = "return_mean") -> Path:
    """Draw return vs frames and vs wall time for each group of runs into ``output``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list[Curve]] = defaultdict(list)
    for curve in curves:
        if y_key in curve.columns:
            groups[curve.label].append(curve)
    if not curves:
        raise SystemExit(
            "no metrics.csv below the given directories: give run dirs or sweep dirs "
            "(each run writes <run dir>/metrics.csv from its first generation on)"
        )
    if not groups:
        logged = sorted({key for curve in curves for key in curve.columns})
        raise SystemExit(
            f"no run below the given directories logged {y_key!r} (--y); "
            f"they logged: {', '.join(logged)}"
        )
    figure, axes = plt.subplots(1, len(X_AXES), figsize=(6 * len(X_AXES), 4.2))
    for axis, (x_key, x_label) in zip(axes, X_AXES.items(), strict=True):
        for label, members in sorted(groups.items()):
            grid, mean, low, high = _band(members, x_key, y_key)
            (line,) = axis.plot(
                grid, mean, label=f"{label} ({len(members)} run{'s' * (len(members) > 1)})"
            )
            if len(members) > 1:
                axis.fill_between(grid, low, high, color=line.get_color(), alpha=0.2)
        axis.set_xlabel(x_label)
        axis.set_ylabel(y_key.replace("_", " "))
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, dpi=120)
    plt.close(figure)
    return output


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.plot``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.plot", description=__doc__.splitlines()[0]
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
    print(plot_curves(load_curves(arguments.directories), output, arguments.y))


if __name__ == "__main__":
    main()
