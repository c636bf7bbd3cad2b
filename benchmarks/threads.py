"""Thread defaults under load: ``auto`` against fixed PyTorch thread counts.

Each task runs as the whole command (``python -m neuroplug ...``, start-up included) with
PyTorch's CPU threads at ``auto`` (the default, 0: one per core on an idle machine, 1 under
load, :class:`neuroplug.runtime.devices.TorchThreads`), 1, and one per core (PyTorch's own
default, which was neuroplug's before), on a quiet machine and beside two CPU-bound
processes (the "loaded" machine: what a laptop running a browser and a build, or a shared
node, looks like). Each run is cut at ``--timeout`` seconds; frames/s come from its
``metrics.csv`` (frames over elapsed at the last row), so a run that collapsed still gets
its speed. EnvPool's threads stay at their default (one per core).

    python benchmarks/threads.py --out benchmarks/results/threads.json

Take it on an otherwise idle machine: the "quiet" rows assume nothing else runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

from neuroplug.runtime.devices import available_cores

RESULTS = Path(__file__).resolve().parent / "results"

TASKS = {
    # Evolution: the population's inference threads are backend.torch_threads.
    "es_cartpole": (
        "backend.torch_threads",
        ["algo=es", "env=cartpole", "run.max_generations=30", "run.stop_when_solved=false"],
    ),
    "es_breakout": (
        "backend.torch_threads",
        [
            "algo=es",
            "env=breakout",
            "algo.population_size=16",
            "env.max_episode_steps=400",  # a net that never presses FIRE would idle to 27k
            "run.max_generations=3",
        ],
    ),
    # Learners: algo.torch_threads (the vector preset sets 1; pixels take auto).
    "ppo_cartpole": (
        "algo.torch_threads",
        ["algo=ppo", "env=cartpole", "run.max_frames=40000", "run.stop_when_solved=false"],
    ),
    "ppo_pong": (
        "algo.torch_threads",
        ["algo=ppo", "env=pong", "algo.segment_steps=2048", "run.max_frames=24576"],
    ),
}
COMMON = ["logger=console", "run.eval_interval=0", "run.eval_episodes=1"]


def _burners(count: int) -> list[subprocess.Popen]:
    """CPU-bound processes beside the run."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _run(overrides: list[str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = Path(scratch) / "run"
        started = time.perf_counter()
        try:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "neuroplug",
                    *overrides,
                    *COMMON,
                    f"run.output_dir={run_dir}",
                ],
                check=True,
                capture_output=True,
                timeout=timeout,
            )
            finished = True
        except subprocess.TimeoutExpired:
            finished = False
        wall = time.perf_counter() - started
        rows = []
        if (run_dir / "metrics.csv").is_file():
            with (run_dir / "metrics.csv").open() as stream:
                rows = list(csv.DictReader(stream))
    last = rows[-1] if rows else None
    return {
        "finished": finished,
        "wall_s": round(wall, 2),
        "frames": int(float(last["frames"])) if last else 0,
        "frames_per_second": round(float(last["frames"]) / float(last["elapsed"]), 1)
        if last and float(last["elapsed"]) > 0
        else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--timeout", type=float, default=90.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "threads.json")
    parser.add_argument("--conditions", nargs="+", default=["quiet", "loaded"])
    parser.add_argument(
        "--append", action="store_true", help="add these runs to --out's (repeats of a condition)"
    )
    arguments = parser.parse_args()
    cores = available_cores()
    settings = {"auto": 0, "1": 1, f"{cores} (one per core)": cores}
    results: dict = {
        "machine": describe(),
        "runs": [],
    }
    if arguments.append and arguments.out.is_file():
        results["runs"] = json.loads(arguments.out.read_text())["runs"]
    for condition in arguments.conditions:
        burners = _burners(2) if condition == "loaded" else []
        try:
            for task in arguments.tasks:
                field, overrides = TASKS[task]
                for label, threads in settings.items():
                    row = _run([*overrides, f"{field}={threads}"], arguments.timeout)
                    row.update(task=task, condition=condition, threads=label)
                    results["runs"].append(row)
                    print(json.dumps(row), flush=True)
        finally:
            for burner in burners:
                burner.kill()
    arguments.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {arguments.out}")
    print(table(results))


def table(results: dict) -> str:
    """Median frames/s per task, setting and condition (with the runs' count), as Markdown;
    a run cut at the time limit counts with the speed it had."""
    cells: dict[tuple[str, str, str], list[float]] = {}
    for run in results["runs"]:
        key = (run["task"], run["threads"], run["condition"])
        cells.setdefault(key, []).append(run["frames_per_second"])
    settings = list(dict.fromkeys(run["threads"] for run in results["runs"]))
    lines = [
        "| task | condition | " + " | ".join(f"{name} frames/s" for name in settings) + " |",
        "|---|---|" + "---|" * len(settings),
    ]
    for task in dict.fromkeys(run["task"] for run in results["runs"]):
        for condition in ("quiet", "loaded"):
            row = []
            for name in settings:
                values = cells.get((task, name, condition), [])
                row.append(f"{statistics.median(values):,.0f} (n={len(values)})" if values else "-")
            if any(value != "-" for value in row):
                lines.append(f"| {task} | {condition} | " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("WANDB_MODE", "offline")
    main()
