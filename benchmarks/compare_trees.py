"""Nothing slower: the same runs from two source trees (the last commit and the working
tree, say), side by side in one run, the trees in turn.

    git worktree add /tmp/before <commit>
    python benchmarks/compare_trees.py --tree before=/tmp/before --tree after=.

Each case is a ``python -m neuroplug`` command run from each tree (``PYTHONPATH`` puts the
tree's ``neuroplug`` and ``plugins/`` first), ``--repeats`` times. Plugins are found by
their installed entry points, so trees whose entry points differ (a module moved) each
need an interpreter with their own install: ``--tree before=/tmp/before=/tmp/venv/bin/python``
(a venv with the same packages and ``pip install --no-deps -e /tmp/before``). a run's speed is its
frames over the seconds its units took (``metrics.csv``: the sum of the
``generation_seconds`` or ``segment_seconds``, start-up and the final evaluation left out).
It writes the medians and their ratio (after over before) to
``benchmarks/results/compare_trees.md``. Take it with nothing else running.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

RESULT = Path(__file__).resolve().parent / "results" / "compare_trees.md"
QUIET = ["logger=none", "run.eval_interval=0", "run.eval_episodes=1", "run.stop_when_solved=false"]
CASES = {
    "td3 halfcheetah": ["algo=td3", "env=halfcheetah", "algo.learning_starts=1000"]
    + ["run.max_frames=6000"],
    "sac halfcheetah": ["algo=sac", "env=halfcheetah", "algo.learning_starts=1000"]
    + ["run.max_frames=4000"],
    "dqn cartpole": ["algo=dqn", "env=cartpole", "run.max_frames=30000"],
    "pbt ppo cartpole": ["algo=pbt", "algo.learner=ppo", "algo.members=8", "env=cartpole"]
    + ["run.max_frames=200000"],
    "cem_rl pendulum": ["algo=cem_rl", "env=pendulum", "algo.learning_starts=1000"]
    + ["run.max_generations=4"],
    "es cartpole": ["algo=es", "env=cartpole", "run.max_generations=30"],
    "ppo cartpole": ["algo=ppo", "env=cartpole", "run.max_frames=100000"],
}
"""What each case runs: the learners and algorithms whose code a structural change touched."""


def frames_per_second(run_dir: Path) -> float:
    """Frames over the seconds the run's units took, from its ``metrics.csv``."""
    with (run_dir / "metrics.csv").open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    unit = "generation_seconds" if "generation_seconds" in rows[0] else "segment_seconds"
    seconds = sum(float(row[unit]) for row in rows)
    return float(rows[-1]["frames"]) / seconds


def run(tree: Path, python: str, overrides: list[str], workdir: Path) -> float:
    """frames/s of ``python -m neuroplug overrides`` from ``tree``."""
    output = workdir / f"run-{time.monotonic_ns()}"
    environment = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'plugins'}"}
    command = [python, "-m", "neuroplug", *QUIET, *overrides]
    command += [f"run.output_dir={output}", f"hydra.run.dir={workdir / 'hydra'}"]
    subprocess.run(command, check=True, capture_output=True, cwd=workdir, env=environment)
    return frames_per_second(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="name=path[=python]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    arguments = parser.parse_args()
    trees, pythons = {}, {}
    for given in arguments.tree:
        name, path, *python = given.split("=", 2)
        trees[name] = Path(path).resolve()
        pythons[name] = python[0] if python else sys.executable
    speeds: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(arguments.repeats):
            for case in arguments.cases:
                for name, tree in trees.items():
                    speed = run(tree, pythons[name], CASES[case], Path(scratch))
                    speeds.setdefault((case, name), []).append(speed)
                    print(f"{repeat} {case:18} {name:8} {speed:10,.0f} frames/s", flush=True)
    names = list(trees)
    lines = [
        "# The same runs from two trees",
        "",
        f"{datetime.date.today()}, {describe()}; `python benchmarks/compare_trees.py "
        + " ".join(f"--tree {name}=..." for name in names)
        + f"`, {arguments.repeats} runs of each, the trees in turn. frames/s over the seconds "
        "the units took (median, runs).",
        "",
        f"| case | {' | '.join(names)} | {names[-1]} / {names[0]} |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for case in arguments.cases:
        medians = [statistics.median(speeds[(case, name)]) for name in names]
        cells = [
            f"{median:,.0f} ({', '.join(f'{v:,.0f}' for v in speeds[(case, name)])})"
            for name, median in zip(names, medians, strict=True)
        ]
        lines.append(f"| {case} | {' | '.join(cells)} | {medians[-1] / medians[0]:.2f} |")
    lines += ["", "Each case: `" + "`; `".join(f"{c}: {' '.join(CASES[c])}" for c in CASES) + "`."]
    RESULT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
