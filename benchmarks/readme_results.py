"""The CartPole results of docs/algorithms.md ("What to expect"), from exactly the commands it shows.

Each command runs as a user would type it (``python -m neuroplug <overrides>``, with only
``run.seed``, ``logger=console`` and the output dir added), for seeds 0-4. A run stops when its
evaluation of the deployed policy reaches CartPole's solved return (475; evaluations every
``run.eval_interval`` generations, and after a generation whose median member reached it),
or at its budget. Reported: the frames used when the first evaluation reached 475 (the
run's frames then), per seed and the median; "not solved" when the budget ran out first.

    python benchmarks/readme_results.py --out benchmarks/results/readme_results.md

Frames do not depend on the machine's load; the wall times printed beside them do.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"
SOLVED = 475.0
COMMANDS = {
    "es": ["algo=es", "env=cartpole"],
    "ga": [
        "algo=ga",
        "env=cartpole",
        "algo.population_size=64",
        "algo.truncation=8",
        "algo.sigma=0.05",
        "algo.elite_episodes=5",
    ],
    "rs": ["algo=rs", "env=cartpole", "algo.episodes_per_member=5"],
}


def _frames_to_solve(overrides: list[str], seed: int) -> tuple[float, float]:
    """(frames when an evaluation first reached 475, or nan; wall seconds)."""
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) / "run"
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "neuroplug",
                *overrides,
                f"run.seed={seed}",
                "logger=console",
                f"run.output_dir={run_dir}",
            ],
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - started
        with (run_dir / "metrics.csv").open(newline="") as stream:
            for row in csv.DictReader(stream):
                value = row.get("eval_return_mean", "")
                if value not in ("", "nan") and float(value) >= SOLVED:
                    return float(row["frames"]), wall
    return math.nan, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--algos", nargs="+", default=list(COMMANDS))
    parser.add_argument("--out", type=Path, default=RESULTS / "readme_results.md")
    arguments = parser.parse_args()
    rows = {}
    for algo in arguments.algos:
        runs = [_frames_to_solve(COMMANDS[algo], seed) for seed in arguments.seeds]
        frames = [value for value, _ in runs]
        solved = [value for value in frames if math.isfinite(value)]
        rows[algo] = {
            "command": "python -m neuroplug " + " ".join(COMMANDS[algo]),
            "frames": frames,
            "median": statistics.median(frames) if len(solved) == len(frames) else math.nan,
            "wall_s": [round(wall, 1) for _, wall in runs],
        }
        print(json.dumps({algo: rows[algo]}), flush=True)
    lines = [
        "# The README's CartPole results",
        "",
        f"`python benchmarks/readme_results.py`, {time.strftime('%Y-%m-%d')}, on "
        f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}, torch {torch.__version__}. Frames when the deployed "
        f"policy's evaluation first reached {SOLVED:.0f}, seeds {arguments.seeds}.",
        "",
        "| command | median frames | per seed | wall s per seed |",
        "|---|---|---|---|",
    ]
    for row in rows.values():
        per_seed = ", ".join(
            f"{value / 1000:.0f}k" if math.isfinite(value) else "not solved"
            for value in row["frames"]
        )
        median = f"{row['median'] / 1000:.0f}k" if math.isfinite(row["median"]) else "-"
        walls = ", ".join(f"{value:.0f}" for value in row["wall_s"])
        lines.append(f"| `{row['command']}` | **{median}** | {per_seed} | {walls} |")
    arguments.out.write_text("\n".join(lines) + "\n")
    arguments.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    os.environ.setdefault("WANDB_MODE", "offline")
    main()
