"""What checkpoints cost a run: their size on disk and the wall time they add, side by side
for two source trees (say the last commit and the working tree) in one run.

    git worktree add /tmp/before HEAD~1
    python benchmarks/checkpoint_cost.py --tree before=/tmp/before --tree after=.

For each tree it runs ``algo=cma_es env=cartpole`` (CartPole's default MLP, 4,610
parameters: CMA-ES's covariance is 4,610 x 4,610) with a checkpoint after every generation
(the defaults) and with ``run.checkpoint_interval`` past the run's end, the trees and
settings in turn, ``--repeats`` times; and ``algo=td3 env=pendulum`` for 12,000 frames
(a replay buffer of 1M transitions, 12,000 filled) once. It writes the wall times, their
ratio and the checkpoint sizes to ``benchmarks/results/checkpoint_cost.md``. Take it with
nothing else running: it measures wall time.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

RESULT = Path(__file__).resolve().parent / "results" / "checkpoint_cost.md"
CMA_ES = [
    "algo=cma_es",
    "env=cartpole",
    "run.stop_when_solved=false",
    "run.eval_interval=0",
    "logger=none",
]
TD3 = ["algo=td3", "env=pendulum", "run.max_frames=12000", "logger=none"]


def run(tree: Path, overrides: list[str], workdir: Path) -> tuple[float, int]:
    """Wall seconds of ``python -m neuroplug overrides`` from ``tree``, and its latest.pt's bytes."""
    output = workdir / f"run-{time.monotonic_ns()}"
    environment = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'plugins'}"}
    command = [sys.executable, "-m", "neuroplug", *overrides, f"run.output_dir={output}"]
    command.append(f"hydra.run.dir={workdir / 'hydra'}")
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=workdir, env=environment)
    seconds = time.perf_counter() - started
    latest = output / "checkpoints" / "latest.pt"
    return seconds, latest.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="name=path")
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    arguments = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in arguments.tree)}
    budget = f"run.max_generations={arguments.generations}"
    settings = {
        "every generation": [*CMA_ES, budget],
        "none (interval past the end)": [*CMA_ES, budget, "run.checkpoint_interval=100000"],
    }
    seconds: dict[tuple[str, str], list[float]] = {}
    sizes: dict[tuple[str, str], int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        for repeat in range(arguments.repeats):
            for name, tree in trees.items():
                for setting, overrides in settings.items():
                    wall, size = run(tree, overrides, workdir)
                    seconds.setdefault((name, setting), []).append(wall)
                    sizes[(name, setting)] = size
                    print(f"{repeat} {name:8} {setting:30} {wall:6.1f} s {size / 2**20:8.1f} MiB")
        td3 = {name: run(tree, TD3, workdir)[1] for name, tree in trees.items()}
    lines = [
        "# What checkpoints cost a run",
        "",
        f"{datetime.date.today()}, {describe()}; `python benchmarks/checkpoint_cost.py "
        + " ".join(f"--tree {name}=..." for name in trees)
        + f"`, {arguments.repeats} runs of each, trees and settings in turn.",
        "",
        f"`{' '.join(CMA_ES)} {budget}` (4,610 parameters):",
        "",
        "| tree | checkpoints | wall s (median, runs) | latest.pt MiB |",
        "|---|---|---|---|",
    ]
    for name in trees:
        for setting in settings:
            runs = seconds[(name, setting)]
            listed = ", ".join(f"{value:.1f}" for value in runs)
            lines.append(
                f"| {name} | {setting} | {statistics.median(runs):.1f} ({listed}) | "
                f"{sizes[(name, setting)] / 2**20:.1f} |"
            )
    lines += ["", "Wall time with a checkpoint every generation over none:", ""]
    every, never = settings
    for name in trees:
        ratio = statistics.median(seconds[(name, every)]) / statistics.median(
            seconds[(name, never)]
        )
        lines.append(f"- {name}: {ratio:.2f}x")
    lines += ["", f"`{' '.join(TD3)}`, latest.pt:", ""]
    lines += [f"- {name}: {size / 2**20:.1f} MiB" for name, size in td3.items()]
    RESULT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
