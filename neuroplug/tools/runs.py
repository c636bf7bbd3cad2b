"""Finished runs read back from their local record, for :mod:`.plot` and :mod:`.compare`.

Every ``metrics.csv`` below some directories (each run writes one in its run dir) with the
run's config (``config.yaml``) flattened to ``dotted.key -> value``; runs labelled by what
tells them apart; a run's metric put on a grid of frames (interpolated, never extrapolated).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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


def settings_of(run_dir: Path) -> dict[str, str]:
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


def is_setting(key: str) -> bool:
    """Whether ``key`` can tell what runs learned apart (see :data:`NOT_A_SETTING`)."""
    return not any(key == skip or key.startswith(skip) for skip in NOT_A_SETTING if skip)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


NO_RUNS = (
    "no metrics.csv below the given directories: give run dirs or sweep dirs "
    "(each run writes <run dir>/metrics.csv from its first generation on)"
)


def not_logged(curves: list[Curve], y_key: str) -> SystemExit:
    """The error for a metric (``--y``) no run logged, naming what they logged."""
    logged = sorted({key for curve in curves for key in curve.columns})
    return SystemExit(
        f"no run below the given directories logged {y_key!r} (--y); "
        f"they logged: {', '.join(logged)}"
    )


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
            curves.append(Curve(path.parent.name, path.parent, columns, settings_of(path.parent)))
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
        differing |= differing_settings(members) - set(IDENTITY)
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


def differing_settings(curves: list[Curve]) -> set[str]:
    """The settings (:func:`is_setting`) that every one of ``curves`` has and not all alike.

    A setting some runs lack came with another version of the config (an older run's): it
    tells nothing apart."""
    keys = {key for curve in curves for key in curve.settings if is_setting(key)}
    differing = set()
    for key in keys:
        held = [curve.settings[key] for curve in curves if key in curve.settings]
        if len(held) == len(curves) and len(set(held)) > 1:
            differing.add(key)
    return differing


def points(curve: Curve, x_key: str, y_key: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows where both x and y were logged (a sparse metric keeps its own rows)."""
    x, y = curve.columns[x_key], curve.columns[y_key]
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def is_sparse(curve: Curve, y_key: str) -> bool:
    """Whether ``y_key`` was logged on some rows only (an evaluation every few units)."""
    return bool(np.isnan(curve.columns[y_key]).any())


def on_grid(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``y(x)`` interpolated at ``grid``; NaN outside ``[x[0], x[-1]]`` (never extrapolated)."""
    values = np.full(len(grid), np.nan)
    covered = (grid >= x[0]) & (grid <= x[-1])
    values[covered] = np.interp(grid[covered], x, y)
    return values
