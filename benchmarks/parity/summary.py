"""The parity suite's statistics: ``python benchmarks/parity/summary.py``.

Reads every run record of ``benchmarks/results/parity/`` (``run.py`` writes them) and
writes, beside them:

- ``summary.md`` and ``summary.json``: per method and task, each side's final score (the
  mean training episode return in the last bin of env steps) as the interquartile mean
  over seeds with a 95% stratified bootstrap confidence interval, the probability that ours
  beats the reference (Agarwal et al. 2021, computed with ``rliable`` through
  :mod:`neuroplug.tools.intervals`, the statistics ``python -m neuroplug.tools.compare``
  gives users' own runs), the verdict (level:
  the intervals overlap; above; a gap otherwise), each side's env steps per
  second (from the comparison's latest one-thread sitting of ``speed.py`` where it has
  one: the suite's runs share the machine with whatever else runs), and the wall time our
  runs took to reach the reference's final score;
- ``<method>/<task>/curves.png``: each side's IQM per bin with its 95% band, against env
  steps and against wall time.

Needs ``rliable`` (``pip install -e ".[compare]"``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
from speed import INDEX  # noqa: E402
from suite import COMPARISONS, DOC_PAGES, Comparison, budgets_markdown  # noqa: E402

from neuroplug.tools import intervals  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "parity"
REPS = 5000
"""Bootstrap repetitions of every interval."""
COLOURS = {
    "neuroplug": "tab:blue",
    "cleanrl": "tab:orange",
    "sb3": "tab:green",
    "evotorch": "tab:red",
    "pycma": "tab:purple",
    "td3": "tab:brown",
    "fixed": "tab:gray",
    "sample_factory": "tab:olive",
    "pyribs": "tab:pink",
    "sb3_pettingzoo": "tab:green",  # Stable-Baselines3, as "sb3"
    "map_elites": "tab:cyan",
    "cleanrl_ma_atari": "tab:orange",  # CleanRL, as "cleanrl"
    "neuroplug_bf16": "tab:purple",
    "neuroplug_normc": "tab:purple",
}
"""Each side's colour in every plot."""
SPARE_COLOURS = ("black", "tab:gray", "tab:olive", "tab:brown")
"""Colours of sides without one of their own, in turn (never two sides alike in a plot)."""


def bins(record: dict) -> tuple[np.ndarray, np.ndarray]:
    """The run's mean training episode return per ``bin`` units (env steps or
    evaluations), each point weighted by the episodes it holds, and the wall time at each
    bin's last point (NaN where a bin holds none)."""
    width, count = record["bin"], math.ceil(record["budget"] / record["bin"])
    totals, weights, times = np.zeros(count), np.zeros(count), np.full(count, np.nan)
    for x, value, weight, at in record["points"]:
        index = min(max(math.ceil(x / width) - 1, 0), count - 1)
        totals[index] += value * weight
        weights[index] += weight
        times[index] = at if math.isnan(times[index]) else max(times[index], at)
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals / weights, times


def load(comparison: Comparison, root: Path = RESULTS) -> dict[str, list[dict]]:
    """A comparison's records by side (those finished), in seed order."""
    found = {}
    for side in comparison.sides:
        paths = [run.record_path(comparison, side.name, seed, root) for seed in comparison.seeds]
        records = [json.loads(path.read_text()) for path in paths if path.is_file()]
        if records:
            found[side.name] = records
    return found


def interval(scores: dict[str, np.ndarray]) -> dict[str, tuple[float, float, float]]:
    """Each side's IQM over its seeds and its 95% stratified bootstrap interval."""
    matrices = {side: values.reshape(-1, 1) for side, values in scores.items()}
    found = intervals.interval_estimates(matrices, intervals.iqm, reps=REPS)
    return {side: tuple(float(value[0]) for value in found[side]) for side in scores}


def curve_bands(
    curves: dict[str, np.ndarray],
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each side's IQM per bin over seeds with its 95% band."""
    matrices = {side: values[:, None, :] for side, values in curves.items()}  # runs x 1 x bins
    return intervals.interval_estimates(matrices, intervals.iqm, reps=REPS // 5)


def improvement(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float, float]:
    """P(a seed of ours scores above a seed of theirs), with its 95% interval."""
    pair = {"pair": [ours.reshape(-1, 1), theirs.reshape(-1, 1)]}
    point, low, high = intervals.interval_estimates(
        pair, intervals.probability_of_improvement, reps=REPS // 5
    )["pair"]
    return float(point[0]), float(low[0]), float(high[0])


def contended(records: list[dict]) -> bool:
    """Whether any of a side's runs went while more work wanted the cores than there were
    (its mean 1-minute load above the cores): its speed is a floor. Runs recorded before
    the load was kept say nothing."""
    return any(
        record["load_average"]["mean"] > record["load_average"]["cores"] + 0.5
        for record in records
        if "load_average" in record
    )


def alone(folder: Path) -> dict | None:
    """The comparison's latest one-thread ``speed.py`` sitting (each side alone on the
    machine): its file, env steps a run, and each side's median env steps per second."""
    index = folder / INDEX
    name = json.loads(index.read_text()).get("one_thread") if index.is_file() else None
    if name is None:
        return None
    sitting = json.loads((folder / name).read_text())
    return {
        "file": name,
        "steps": sitting["steps"],
        "steps_per_second": {
            side: float(np.median([run["steps_per_second"] for run in runs]))
            for side, runs in sitting["runs"].items()
        },
    }


def time_to_reach(target: float, iqm: np.ndarray, times: np.ndarray) -> float | None:
    """Seconds (mean over seeds) at the first bin whose IQM reaches ``target``."""
    reached = np.flatnonzero(iqm >= target)
    return float(times[reached[0]]) if len(reached) else None


def compare(comparison: Comparison, sides: dict[str, list[dict]], out: Path) -> dict:
    """One comparison's statistics and its curves' plot."""
    method, task = comparison.method, comparison.task
    curves, clocks = {}, {}
    for side, records in sides.items():
        binned = [bins(record) for record in records]
        curves[side] = np.array([values for values, _ in binned])
        clocks[side] = np.nanmean(np.array([times for _, times in binned]), axis=0)
    # A run with no training episode ended in the last bin has no score (a self-play rally
    # that never ends): it is left out of its side's statistics, and the row says so.
    unscored = {
        side: [r["seed"] for r, values in zip(sides[side], curves[side], strict=True)
               if not np.isfinite(values[-1])]
        for side in curves
    }  # fmt: skip
    for side, seeds in unscored.items():
        if seeds and len(seeds) < len(curves[side]):
            scored = np.isfinite(curves[side][:, -1])
            curves[side] = curves[side][scored]
    finals = {side: values[:, -1] for side, values in curves.items()}
    complete = {side: values for side, values in finals.items() if np.isfinite(values).all()}
    row: dict = {
        "method": method,
        "task": task,
        "budget": sides[next(iter(sides))][0]["budget"],
        "unit": sides[next(iter(sides))][0]["unit"],
        "seeds": {side: [record["seed"] for record in records] for side, records in sides.items()},
        "steps_per_second": {
            side: float(np.mean([record["steps_per_second"] for record in records]))
            for side, records in sides.items()
        },
        "contended": sorted(side for side, records in sides.items() if contended(records)),
        "alone": alone(out),
        "final_scores": {side: values.tolist() for side, values in finals.items()},
        "score": comparison.score,
    }
    if any(unscored.values()):
        row["unscored"] = {side: seeds for side, seeds in unscored.items() if seeds}
    also = {
        name: {
            side: np.array([record["also"][name][-1] for record in records])
            for side, records in sides.items()
        }
        for name in comparison.also
    }
    if also and all(len(values) >= 2 for values in finals.values()):
        row["also"] = {name: interval(values) for name, values in also.items()}
    # The deployed policy's evaluation at the budget's end, where every run of every side
    # kept one (our runner's records since 2026-12-06): what a method that deploys a
    # champion rather than its training population (erl) is judged by.
    deployed = {
        side: [record.get("final_evaluation") for record in records]
        for side, records in sides.items()
    }
    if all(len(values) >= 2 and None not in values for values in deployed.values()):
        row["deployed"] = interval({side: np.array(values) for side, values in deployed.items()})
    if len(complete) == len(finals) and all(len(values) >= 2 for values in finals.values()):
        row["final"] = interval(complete)
        references = [side for side in finals if side != "neuroplug"]
        if "neuroplug" in finals:
            ours = row["final"]["neuroplug"]
            row["versus"] = {}
            bands = curve_bands({side: curves[side] for side in curves})
            for reference in references:
                theirs = row["final"][reference]
                overlap = ours[2] >= theirs[1] and theirs[2] >= ours[1]
                reach = time_to_reach(theirs[0], bands["neuroplug"][0], clocks["neuroplug"])
                their_time = float(np.mean([r["wall_seconds"] for r in sides[reference]]))
                row["versus"][reference] = {
                    "probability_of_improvement": improvement(
                        finals["neuroplug"], finals[reference]
                    ),
                    "verdict": "above" if ours[1] > theirs[2] else ("level" if overlap else "gap"),
                    "seconds_to_reference_final": reach,
                    "reference_seconds": their_time,
                }
            plot(method, task, curves, clocks, bands, row, out)
    return row


def plot(method, task, curves, clocks, bands, row: dict, out: Path) -> None:
    """IQM per bin with its band, against env steps and against wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    spare = iter(c for c in SPARE_COLOURS if c not in {COLOURS.get(side) for side in bands})
    colours = {side: COLOURS.get(side) or next(spare) for side in bands}
    for side, (iqm, low, high) in bands.items():
        runs = len(curves[side])
        centres = (np.arange(len(iqm)) + 1) * row["budget"] / len(iqm)
        for axis, x in zip(axes, (centres, clocks[side]), strict=True):
            colour = colours[side]
            label = f"{side} (IQM of {runs} seeds)"
            axis.plot(x, iqm, marker="o", ms=3, color=colour, label=label)
            axis.fill_between(x, low, high, color=colour, alpha=0.2)
    axes[0].set_xlabel(row["unit"].replace("_", " "))
    axes[1].set_xlabel("wall time (s, mean over seeds)")
    for axis in axes:
        axis.set_ylabel(row["score"])
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.suptitle(f"{method} on {task}: IQM over seeds, 95% stratified bootstrap band")
    figure.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    figure.savefig(out / "curves.png", dpi=110)
    plt.close(figure)


EXPLANATION = (
    "Final score: mean training episode return in the last bin of the budget (a strategy's "
    "population mean; PBT's best member's objective; self-play Pong's episode length; a "
    "quality-diversity method's QD-score, "
    "its final coverage below the table); IQM over seeds [95% stratified "
    "bootstrap CI] (rliable). P(ours > ref): probability of improvement [CI]. Verdict: "
    "level where the intervals overlap, above where ours is above, gap otherwise. Speed: "
    "env steps per second of each side (each on one thread, the sides taking turns seed by "
    "seed on the same machine; `*`: some of that side's runs went while more work wanted "
    "the cores than there were, by the load average recorded since 2026-12-06, so that "
    "speed is a floor; our runs' time is their training's, their final evaluation left "
    "out, in records that have `evaluation_seconds`: the peers evaluate nothing; `†`: "
    "instead, both sides alone on the machine at a shorter budget, one thread each, "
    "taking turns (`benchmarks/parity/speed.py`, the file named below the table)); time: our "
    "runs' wall "
    "time to the reference's final IQM "
    "beside the reference's wall time to its end. Raw numbers: the `seed*.json` files; "
    "regenerate with `python benchmarks/parity/summary.py`."
)


def markdown(rows: list[dict]) -> str:
    """The summary page: what the numbers are, the table, the machines."""
    machines = sorted({machine for row in rows for machine in row.get("machines", [])})
    lines = [
        "# Parity: each method beside its reference implementation",
        "",
        EXPLANATION,
        "",
        table(rows),
        "",
        *also_lines(rows),
        *(f"Machine: {machine}." for machine in machines),
        *(
            [
                "Comparisons whose runs went on more than one machine: "
                + "; ".join(
                    f"`{row['method']}` on {row['task']}"
                    for row in rows
                    if len(row.get("machines", [])) > 1
                )
                + "."
            ]
            if any(len(row.get("machines", [])) > 1 for row in rows)
            else []
        ),
        "",
    ]
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """One line per method, task and reference (a comparison still running says so)."""
    lines = [
        "| method | task | budget | seeds | ours | reference | theirs | P(ours > ref) | verdict "
        "| steps/s ours / theirs | time to their final: ours / theirs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        final = row.get("final", {})
        for reference, versus in row.get("versus", {}).items():
            ours, theirs = final["neuroplug"], final[reference]
            p = versus["probability_of_improvement"]
            reach = versus["seconds_to_reference_final"]
            speed, sitting = row["steps_per_second"], row.get("alone")
            if sitting and {"neuroplug", reference} <= sitting["steps_per_second"].keys():
                speed = sitting["steps_per_second"]
            lines.append(
                f"| `{row['method']}` | {row['task']} | {budget(row)} "
                f"| {len(row['seeds']['neuroplug'])} / {len(row['seeds'][reference])} "
                f"| {ours[0]:,.0f} [{ours[1]:,.0f}, {ours[2]:,.0f}] | {reference} "
                f"| {theirs[0]:,.0f} [{theirs[1]:,.0f}, {theirs[2]:,.0f}] "
                f"| {p[0]:.2f} [{p[1]:.2f}, {p[2]:.2f}] | {versus['verdict']} "
                f"| {speed['neuroplug']:.0f}{mark(row, 'neuroplug', speed)} / "
                f"{speed[reference]:.0f}{mark(row, reference, speed)} "
                f"| {'not reached' if reach is None else f'{reach:,.0f} s'} / "
                f"{versus['reference_seconds']:,.0f} s |"
            )
        if not row.get("versus"):
            done = ", ".join(f"{side} {len(seeds)}" for side, seeds in row["seeds"].items())
            lines.append(
                f"| `{row['method']}` | {row['task']} | {budget(row)} | {done} "
                "| running | | | | | | |"
            )
    return "\n".join(lines)


def mark(row: dict, side: str, speed: dict) -> str:
    """``†`` beside a speed measured alone (:func:`alone`), ``*`` beside one measured
    beside other work (:func:`contended`)."""
    if speed is not row["steps_per_second"]:
        return "†"
    return "*" if side in row.get("contended", ()) else ""


def also_lines(rows: list[dict]) -> list[str]:
    """The measures recorded beside the score (the deployed policy's final evaluation, QD's
    coverage), final IQM [95% CI] per side, one line per comparison, each followed by a
    blank line."""
    lines = []
    for row in rows:
        if row.get("alone"):
            sitting = row["alone"]
            lines += [
                f"`{row['method']}` on {row['task']}, speed alone (`†`): {sitting['steps']:,} "
                f"env steps a run, `benchmarks/results/parity/{row['method']}/{row['task']}/"
                f"{sitting['file'].removesuffix('.json')}.md`.",
                "",
            ]
        for side, seeds in row.get("unscored", {}).items():
            listed = ", ".join(str(seed) for seed in seeds)
            lines += [
                f"`{row['method']}` on {row['task']}: {side}'s seed {listed} ended no training "
                "episode in the last bin, so it has no score and is left out of that side's "
                "statistics.",
                "",
            ]
        if "deployed" in row:
            values = ", ".join(
                f"{side} {iqm:,.0f} [{low:,.0f}, {high:,.0f}]"
                for side, (iqm, low, high) in row["deployed"].items()
            )
            lines += [
                f"`{row['method']}` on {row['task']}, the deployed policy's evaluation at the "
                f"budget's end (greedy episodes): {values}.",
                "",
            ]
        for name, sides in row.get("also", {}).items():
            values = ", ".join(
                f"{side} {iqm:.2f} [{low:.2f}, {high:.2f}]"
                for side, (iqm, low, high) in sides.items()
            )
            lines += [f"`{row['method']}` on {row['task']}, final {name}: {values}.", ""]
    return lines


def budget(row: dict) -> str:
    """``100,000 steps`` or ``2,000 evaluations``."""
    unit = "steps" if row["unit"] == "env_steps" else "evaluations"
    return f"{row['budget']:,} {unit}"


DOCS = Path(__file__).resolve().parents[2] / "docs"


def write_block(page: Path, name: str, text: str) -> None:
    """Put ``text`` between the page's ``<!-- parity:name -->`` markers (added under its
    ``## Results`` heading, or at its end, the first time)."""
    start, end = f"<!-- parity:{name} -->", f"<!-- /parity:{name} -->"
    content = page.read_text()
    block = f"{start}\n{text.strip()}\n{end}"
    if start in content:
        before, rest = content.split(start, 1)
        content = before + block + rest.split(end, 1)[1]
    elif "\n## Results\n" in content:
        head, tail = content.split("\n## Results\n", 1)
        content = f"{head}\n## Results\n\n{block}\n{tail}"
    else:
        content = content.rstrip("\n") + f"\n\n{block}\n"
    page.write_text(content)


def method_block(method: str, rows: list[dict], results: Path) -> str:
    """A method's parity rows and curves, for its docs page."""
    mine = [row for row in rows if row["method"] == method]
    plots = [
        f"![{method} on {row['task']}](../results/parity/{method}/{row['task']}/curves.png)"
        for row in mine
        if (results / method / row["task"] / "curves.png").is_file()
    ]
    lines = [
        f"**Parity** ([the suite](../parity.md)): `{method}` beside its reference "
        "implementation over seeds, IQM [95% CI] of the final score.",
        "",
        table(mine)
        if mine
        else "Not run yet: `python benchmarks/parity/run.py --only " + method + "`.",
        "",
        *also_lines(mine),
        *plots,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    arguments = parser.parse_args(argv)
    rows = []
    for comparison in COMPARISONS:
        sides = load(comparison, arguments.results)
        if not sides:
            continue
        row = compare(comparison, sides, arguments.results / comparison.key)
        # Every machine its runs went on (a suite resumed on another machine mixes them).
        row["machines"] = sorted(
            {record["machine"] for records in sides.values() for record in records}
        )
        rows.append(row)
    (arguments.results / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    (arguments.results / "summary.md").write_text(markdown(rows))
    print(markdown(rows))
    if arguments.results == RESULTS:  # the docs show the committed results, not a trial's
        write_block(DOCS / "parity.md", "budgets", budgets_markdown())
        write_block(DOCS / "parity.md", "results", markdown(rows).split("\n", 2)[2])  # untitled
        for method in dict.fromkeys(comparison.method for comparison in COMPARISONS):
            write_block(DOCS / DOC_PAGES[method], method, method_block(method, rows, RESULTS))


if __name__ == "__main__":
    main()
