"""Statistics over seeds: ``python -m neuroplug.tools.compare <run or sweep dir>... [--by KEY...]``.

Tells groups of runs apart as Agarwal et al. 2021 ("Deep RL at the edge of the statistical
precipice", NeurIPS) recommend, with their library, rliable. Runs (every ``metrics.csv``
below the dirs, read by :mod:`.runs`) are grouped by algorithm (``algo.name``) or by the
settings given with ``--by``; the task (``env.task_id``) is rliable's task axis, so each
group's scores form a ``runs x tasks`` matrix. Each run's metric is put on a grid of frames
its task's runs share, up to the shortest one's last frame (interpolated, never
extrapolated): its final score is the metric at the grid's end, its area-under-curve (AUC)
score the metric's mean over the grid. With several tasks, scores are min-max normalised
per task over all runs; a group with more runs on one task than another keeps as many on
each, the lowest seeds. Writes, into ``--out`` (default ``<first dir>/compare/``):

- ``scores.md`` and ``scores.json``: each group's final and AUC scores as interquartile mean
  (IQM) and mean with 95% stratified bootstrap confidence intervals, and the probability
  that each group's final score beats each other's (``improvement``);
- ``curves.png``: each group's IQM against frames with its 95% band;
- ``profile.png``: performance profiles of the final scores (the fraction of runs above
  each score);
- ``runs.json``: every run's raw final and AUC score, its dir, group and seed.

Needs rliable (``pip install neuroplug[compare]``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from neuroplug.tools import intervals
from neuroplug.tools.comparison import (
    BY_ALGORITHM,
    GRID_POINTS,
    SCORES,
    STATISTICS,
    Comparison,
    compare,
)
from neuroplug.tools.runs import load_curves


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _estimate(value: float, low: float, high: float) -> str:
    return f"{_number(value)} [{_number(low)}, {_number(high)}]"


def _on_tasks(comparison: Comparison) -> str:
    tasks = list(comparison.frames)
    return tasks[0] if len(tasks) == 1 else f"{len(tasks)} tasks (normalised per task)"


def _scores_record(comparison: Comparison) -> dict:
    """What ``scores.json`` holds."""
    return {
        "metric": comparison.metric,
        "by": list(comparison.by),
        "reps": comparison.reps,
        "confidence": intervals.CONFIDENCE,
        "normalised": comparison.normalised,
        "tasks": {
            task: {"first_frame": float(frames[0]), "last_frame": float(frames[-1])}
            for task, frames in comparison.frames.items()
        },
        "notes": comparison.notes,
        "groups": {
            group: {
                "runs": comparison.runs_per_task(group),
                "tasks": list(comparison.frames),
                "seeds": {
                    task: [run.seed for run in runs if run.task == task]
                    for task in comparison.frames
                },
                **comparison.scores[group],
            }
            for group, runs in comparison.runs.items()
        },
        "improvement": comparison.improvement,
    }


def _runs_record(comparison: Comparison) -> list[dict]:
    """What ``runs.json`` holds: every run's raw (not normalised) scores."""
    return [
        {
            "dir": str(run.curve.run_dir),
            "group": group,
            "task": run.task,
            "seed": run.seed,
            "final": float(run.values[-1]),
            "auc": float(run.values.mean()),
        }
        for group, runs in comparison.runs.items()
        for run in runs
    ]


def _scores_page(comparison: Comparison) -> str:
    """What ``scores.md`` says."""
    spans = "; ".join(
        f"{task} from {_number(frames[0])} to {_number(frames[-1])}"
        for task, frames in comparison.frames.items()
    )
    lines = [
        f"# {comparison.metric} by {' '.join(comparison.by)} on {_on_tasks(comparison)}",
        "",
        f"Runs aligned on frames ({spans}: up to the shortest run's last frame, "
        f"{GRID_POINTS} points). Final: {comparison.metric} at the last of them; AUC: its mean "
        "over them. IQM: the mean of the middle half of the runs (over tasks); [low, high]: "
        f"the 95% stratified bootstrap confidence interval ({comparison.reps} resamples of the "
        "runs, rliable).",
        "",
        f"| group | {_runs(comparison)} | final IQM | final mean | AUC IQM | AUC mean |",
        "|---|---|---|---|---|---|",
    ]
    for group, scores in comparison.scores.items():
        cells = [_estimate(**scores[kind][name]) for kind in SCORES for name in STATISTICS]
        lines.append(f"| {group} | {comparison.runs_per_task(group)} | {' | '.join(cells)} |")
    if comparison.improvement:
        lines += [
            "",
            "## Probability of improvement (final scores)",
            "",
            "P(X > Y): the chance that a run of X ends above a run of Y on the same task (ties "
            "count half), averaged over tasks, with its 95% stratified bootstrap interval.",
            "",
            "| X | Y | P(X > Y) |",
            "|---|---|---|",
        ]
        for pair in comparison.improvement:
            estimate = _estimate(pair["probability"], pair["low"], pair["high"])
            lines.append(f"| {pair['x']} | {pair['y']} | {estimate} |")
    if comparison.notes:
        lines += ["", "## Notes", "", *(f"- {note}" for note in comparison.notes)]
    return "\n".join(lines) + "\n"


def _runs(comparison: Comparison) -> str:
    return "runs per task" if comparison.normalised else "runs"


def _label(comparison: Comparison, group: str) -> str:
    return f"{group} ({comparison.runs_per_task(group)} {_runs(comparison)})"


def _colors(comparison: Comparison) -> dict[str, tuple]:
    import matplotlib

    palette = matplotlib.colormaps["tab10"]
    return {_label(comparison, group): palette(k % 10) for k, group in enumerate(comparison.runs)}


def plot_curves(comparison: Comparison, output: Path) -> Path:
    """Each group's IQM against frames (one task) or the share of each task's frames, with
    its 95% stratified bootstrap band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    one_task = len(comparison.frames) == 1
    x = next(iter(comparison.frames.values())) if one_task else np.linspace(0, 1, GRID_POINTS)
    colors = _colors(comparison)
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for group, (iqm, low, high) in comparison.curves.items():
        label = _label(comparison, group)
        axis.plot(x, iqm, color=colors[label], label=label)
        axis.fill_between(x, low, high, color=colors[label], alpha=0.2, lw=0)
    axis.set_xlabel("emulator frames" if one_task else "share of each task's common frames")
    normalised = ", normalised" if comparison.normalised else ""
    axis.set_ylabel(f"{comparison.metric.replace('_', ' ')} (IQM over runs{normalised})")
    axis.set_title(
        f"{comparison.metric} on {_on_tasks(comparison)}: IQM, 95% stratified bootstrap CI",
        fontsize=10,
    )
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, title=" ".join(comparison.by), title_fontsize=8)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)
    return output


def plot_profiles(comparison: Comparison, output: Path) -> Path:
    """Performance profiles of the final scores: for each score tau, the fraction of each
    group's runs above it, with 95% bands."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    final = {_label(comparison, group): comparison.final(group) for group in comparison.runs}
    low = min(float(scores.min()) for scores in final.values())
    high = max(float(scores.max()) for scores in final.values())
    # From just below the lowest score, where every profile is 1, to just above the highest.
    margin = 0.05 * (high - low) or 0.5
    thresholds = np.linspace(low - margin, high + margin, 101)
    profiles, bands = intervals.performance_profiles(final, thresholds, comparison.reps)
    figure, axis = plt.subplots(figsize=(7, 4.5))
    normalised = ", normalised" if comparison.normalised else ""
    plot_utils.plot_performance_profiles(
        profiles,
        thresholds,
        performance_profile_cis=bands,
        colors=_colors(comparison),
        ax=axis,
        xlabel=rf"final {comparison.metric.replace('_', ' ')}{normalised} ($\tau$)",
        ylabel=r"fraction of runs with final score $> \tau$",
        labelsize="medium",
        ticklabelsize="medium",
    )
    axis.set_title(
        f"final {comparison.metric} on {_on_tasks(comparison)}\n"
        "performance profile, 95% stratified bootstrap bands",
        fontsize=10,
    )
    axis.legend(fontsize=8, title=" ".join(comparison.by), title_fontsize=8)
    figure.tight_layout()
    figure.savefig(output, dpi=120)
    plt.close(figure)
    return output


def write(comparison: Comparison, out: Path) -> list[Path]:
    """Every output into ``out``: ``scores.md``, ``scores.json``, ``runs.json``,
    ``curves.png``, ``profile.png``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "scores.md").write_text(_scores_page(comparison))
    (out / "scores.json").write_text(json.dumps(_scores_record(comparison), indent=2) + "\n")
    (out / "runs.json").write_text(json.dumps(_runs_record(comparison), indent=2) + "\n")
    plot_curves(comparison, out / "curves.png")
    plot_profiles(comparison, out / "profile.png")
    return [
        out / name
        for name in ("scores.md", "scores.json", "runs.json", "curves.png", "profile.png")
    ]


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.compare``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.compare", description=__doc__.splitlines()[0]
    )
    parser.add_argument("directories", nargs="+", type=Path, help="run or sweep directories")
    parser.add_argument(
        "--by",
        nargs="+",
        default=list(BY_ALGORITHM),
        metavar="KEY",
        help="settings whose values make the groups (default: algo.name; e.g. --by algo.sigma)",
    )
    parser.add_argument(
        "--y",
        default=None,
        help="metric to compare (default: eval_return_mean where every run logged it, else "
        "return_mean)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder to write to (default: <first dir>/compare)"
    )
    parser.add_argument(
        "--reps", type=int, default=2000, help="bootstrap resamples per interval (default 2000)"
    )
    arguments = parser.parse_args(argv)
    missing = [str(path) for path in arguments.directories if not path.is_dir()]
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    if arguments.reps < 1:
        parser.error(f"--reps must be at least 1, got {arguments.reps}")
    comparison = compare(
        load_curves(arguments.directories), tuple(arguments.by), arguments.y, arguments.reps
    )
    written = write(comparison, arguments.out or arguments.directories[0] / "compare")
    print(written[0].read_text())
    print("\n".join(str(path) for path in written))


if __name__ == "__main__":
    main()
