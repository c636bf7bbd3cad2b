"""What a MAP-Elites archive claims beside what its elites do, on a noisy task (issue 68,
part 4): HalfCheetah's QD task of the parity suite (200-step episodes, 50 cells of final x
position, 250 generations of 64), seeds side by side, in two settings:

- ``never``: no re-evaluation during the run (as pyribs keeps an archive), and one at the
  very end (``algo.reevaluate_every=250``): the archive's stored QD-score is the best draw
  per cell; the re-evaluated one is what those elites do in 4 fresh episodes each;
- ``default``: neuroplug's default, the elites re-evaluated whenever the offspring have
  played ten times a re-evaluation's episodes, each elite kept as the mean of its episodes.

A re-evaluation logs ``algo/qd_score_before_reevaluation`` (what the archive claimed) and
``algo/qd_score_reevaluated`` (Flageat & Cully's corrected archive: the elites' fresh
episodes alone, placed anew, the best per cell); the summary compares the two at each
run's last re-evaluation (``never``: its end).

::

    python benchmarks/qd_reevaluation.py             # every run not done, then the summary
    python benchmarks/qd_reevaluation.py --summary   # the summary of what is done

Writes ``benchmarks/results/qd_reevaluation/``: each run's ``metrics.csv`` and
``config.yaml`` (checkpoints deleted once done), ``summary.md`` and ``curves.png``.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "parity"))

import evidence  # noqa: E402
from machine import describe  # noqa: E402
from suite import QD_BATCH, QD_TASKS  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "qd_reevaluation"
TASK = QD_TASKS["HalfCheetah-v4"]
SEEDS = (1, 2, 3)
SETTINGS = {
    "never": (f"algo.reevaluate_every={TASK.generations}",),
    "default": (),
}
"""Each setting's overrides beside the parity suite's archive."""
COMMON = (
    "algo=map_elites", "env=halfcheetah", *TASK.ours(), f"algo.population_size={QD_BATCH}",
    f"run.max_generations={TASK.generations}", "run.eval_interval=0",
    "run.checkpoint_interval=25", "logger=console",
)  # fmt: skip


def run(setting: str, seed: int) -> Path:
    """One run (resumed where it stopped); its checkpoints dropped once done."""
    out = RESULTS / f"{setting}_seed{seed}"
    if not (out / "finished").exists():
        resume = (out / "checkpoints" / "latest.pt").exists()
        target = f"run.resume={out}" if resume else f"run.output_dir={out}"
        overrides = [*COMMON, *SETTINGS[setting], f"run.seed={seed}", target]
        subprocess.run([sys.executable, "-m", "neuroplug", *overrides], check=True)
        (out / "finished").write_text("")
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    return out


def _rows(setting: str, seed: int) -> list[dict[str, str]]:
    return list(csv.DictReader((RESULTS / f"{setting}_seed{seed}" / "metrics.csv").open()))


def summary() -> None:
    """``summary.md`` and ``curves.png`` from the finished runs."""
    lines = [
        "# A MAP-Elites archive's QD-score: what it claims, what its elites do",
        "",
        f"Machine: {describe()}. `python -m neuroplug {' '.join(COMMON)}` plus each "
        "setting's overrides and `run.seed`. At each run's last re-evaluation (every elite "
        "4 fresh episodes; `never`: at its end): *claimed* is the archive's QD-score just "
        "before it, *done* the re-evaluated one (the elites' fresh episodes alone placed in an empty archive, the "
        "best per cell; Flageat & Cully 2023). QD-score offset -200, 50 cells.",
        "",
        "| setting | seed | generation | claimed | done | done / claimed | coverage: the archive "
        "after / the corrected one |",
        "|---|---|---|---|---|---|---|",
    ]
    drawn, axes = evidence.figure(len(SETTINGS), sharey=True)
    for axis, setting in zip(axes, SETTINGS, strict=True):
        ratios = []
        for seed in SEEDS:
            if not (RESULTS / f"{setting}_seed{seed}" / "finished").exists():
                continue
            rows = _rows(setting, seed)
            generation = np.array([float(row["generation"]) for row in rows])
            stored = np.array([float(row["algo/qd_score"]) for row in rows])
            (line,) = axis.plot(generation, stored, label=f"seed {seed}: stored")
            checked = [row for row in rows if row.get("algo/qd_score_reevaluated")]
            axis.plot(
                [float(row["generation"]) for row in checked],
                [float(row["algo/qd_score_reevaluated"]) for row in checked],
                "o", color=line.get_color(), label=f"seed {seed}: re-evaluated",
            )  # fmt: skip
            last = checked[-1]
            claimed = float(last["algo/qd_score_before_reevaluation"])
            done = float(last["algo/qd_score_reevaluated"])
            ratios.append(done / claimed)
            coverage = f"{float(last['algo/coverage']):.2f} / {float(last['algo/coverage_reevaluated']):.2f}"
            lines.append(
                f"| {setting} | {seed} | {last['generation']} | {claimed:,.0f} | {done:,.0f} "
                f"| {done / claimed:.2f} | {coverage} |"
            )
        if ratios:
            lines.append(f"| {setting} | mean | | | | {np.mean(ratios):.2f} | |")
        axis.set_title(f"re-evaluation: {setting}")
        axis.set_xlabel("generation")
        axis.legend(fontsize=7)
    axes[0].set_ylabel("QD-score (offset -200)")
    evidence.write_summary(RESULTS, drawn, lines)


def run_all() -> None:
    """Every setting's every seed not done."""
    for seed in SEEDS:
        for setting in SETTINGS:
            run(setting, seed)


if __name__ == "__main__":
    evidence.main(__doc__.splitlines()[0], RESULTS, run_all, summary)
