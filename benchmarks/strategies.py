"""The Gaussian search strategies against EvoTorch 0.6.1's, side by side in one run.

Each strategy of neuroplug (``cma_es``, ``pgpe``, ``snes``; ``sep_cma_es`` and ``xnes``
too, which EvoTorch's run here does not pair) and EvoTorch's CMA-ES, PGPE (ClipUp) and
SNES (``benchmarks/peers/evotorch_strategies.py``, in EvoTorch's own venv:
``--evotorch-python``) train the same policy (a 64-64 tanh MLP, observation normalisation)
with the same population:

- **CartPole-v1**: wall time (from process start, start-up included) and frames until the
  deployed policy (the search's mean) averages 475 over 10 episodes, evaluated after every
  generation; capped at ``--cartpole-seconds``.
- **HalfCheetah**: the return of the mean (5 episodes) after ``--cheetah-frames`` frames,
  and training frames/s. neuroplug steps EnvPool's HalfCheetah-v4; EvoTorch gymnasium's
  HalfCheetah-v5 (its MuJoCo bindings): the same robot and reward terms, different
  simulator builds.

EvoTorch evaluates its population with ``--evotorch-actors`` Ray actors (2: one per core
here); neuroplug with its default scheduler. Results, curves and the machine go to
``benchmarks/results/strategies/``.

    python benchmarks/strategies.py --evotorch-python /tmp/evotorch-venv/bin/python
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from machine import describe

RESULTS = Path(__file__).resolve().parent / "results" / "strategies"
PEER = Path(__file__).resolve().parent / "peers" / "evotorch_strategies.py"
NET = ["net.type=mlp", "net.hidden_sizes=[64,64]", "net.activation=tanh"]
PAIRED = ("cma_es", "pgpe", "snes")
OURS_ONLY = ("sep_cma_es", "xnes")
PGPE_POPULATION = 50
"""PGPE has no population from the dimension: EvoTorch's examples use 50-200."""


def _population(algo: str) -> int:
    return PGPE_POPULATION if algo == "pgpe" else 0  # 0: 4 + 3 ln D, both libraries


def _neuroplug(algo: str, task: list[str], budget: list[str], out: Path, seconds: float):
    """One neuroplug run; returns its rows (frames, elapsed, eval) and wall seconds."""
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        f"algo={algo}",
        f"algo.population_size={_population(algo)}",
        *NET,
        *task,
        *budget,
        "logger=console",
        f"run.output_dir={out}",
    ]
    started = time.perf_counter()
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        pass  # capped: the rows written so far are the result
    wall = time.perf_counter() - started
    rows = []
    for row in csv.DictReader((out / "metrics.csv").open()):
        value = row.get("eval_return_mean", "")
        rows.append(
            {
                "frames": int(float(row["frames"])),
                "elapsed": float(row["elapsed"]),
                "population_mean": float(row["return_mean"]),
                "eval_return": float(value) if value not in ("", "nan") else math.nan,
            }
        )
    return rows, wall


def _evotorch(python: str, algo: str, arguments: list[str], seconds: float):
    command = [python, str(PEER), "--algo", algo, "--popsize", str(_population(algo))]
    started = time.perf_counter()
    result = subprocess.run(
        [*command, *arguments], capture_output=True, text=True, timeout=seconds + 300
    )
    wall = time.perf_counter() - started
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"EvoTorch {algo} failed:\n{result.stderr[-3000:]}")
    rows = [line for line in lines if not line.get("summary")]
    return rows, wall


def _solved_at(rows: list[dict], target: float):
    for row in rows:
        if row["eval_return"] >= target:
            return row
    return None


def cartpole(args, lines: list[str], report: dict) -> None:
    lines += [
        "## CartPole-v1: time to solve (mean of 10 evaluation episodes >= 475)",
        "",
        "| strategy | library | population | solved | frames | wall s (process) | "
        "neuroplug faster |",
        "|---|---|---|---|---|---|---|",
    ]
    task = ["env=cartpole", "run.eval_interval=1", "run.eval_episodes=10"]
    for algo in (*PAIRED, *OURS_ONLY):
        with tempfile.TemporaryDirectory() as scratch:
            rows, wall = _neuroplug(
                algo,
                task,
                ["run.max_generations=10000"],
                Path(scratch) / "run",
                args.cartpole_seconds,
            )
        solved = _solved_at(rows, 475)
        entry = {"neuroplug": {"rows": rows, "wall": wall, "solved": solved is not None}}
        theirs_wall = None
        if algo in PAIRED and args.evotorch_python:
            peer, peer_wall = _evotorch(
                args.evotorch_python,
                algo,
                [
                    "--env",
                    "CartPole-v1",
                    "--solve",
                    "475",
                    "--seconds",
                    str(args.cartpole_seconds),
                    "--actors",
                    str(args.evotorch_actors),
                ],
                args.cartpole_seconds,
            )
            peer_solved = _solved_at(peer, 475)
            entry["evotorch"] = {"rows": peer, "wall": peer_wall, "solved": bool(peer_solved)}
            theirs_wall = peer_wall if peer_solved else None
        report.setdefault("cartpole", {})[algo] = entry
        for library, data in entry.items():
            hit = _solved_at(data["rows"], 475)
            ratio = ""
            if library == "neuroplug" and hit and algo in PAIRED:
                ratio = (
                    f"{theirs_wall / data['wall']:.1f}x"
                    if theirs_wall
                    else f"> {args.cartpole_seconds / data['wall']:.0f}x (EvoTorch unsolved)"
                )
            population = data["rows"][0].get("popsize", "") if library == "evotorch" else ""
            lines.append(
                f"| {algo} | {library} | {population or _population(algo) or '4+3 ln D'} | "
                f"{'yes' if hit else 'no'} | {hit['frames'] if hit else data['rows'][-1]['frames']:,} | "
                f"{data['wall']:.1f} | {ratio} |"
            )
            print(lines[-1], flush=True)
    lines.append("")


def cheetah(args, lines: list[str], report: dict) -> None:
    lines += [
        f"## HalfCheetah: return at {args.cheetah_frames:,} frames",
        "",
        "| strategy | library | frames | eval return (5 episodes) | training frames/s | "
        "frames/s ratio |",
        "|---|---|---|---|---|---|",
    ]
    budget = [f"run.max_frames={args.cheetah_frames}", "run.eval_interval=5"]
    budget += ["run.eval_episodes=5", "run.stop_when_solved=false"]
    for algo in PAIRED + OURS_ONLY:
        with tempfile.TemporaryDirectory() as scratch:
            rows, wall = _neuroplug(
                algo, ["env=halfcheetah"], budget, Path(scratch) / "run", args.cheetah_seconds
            )
        entry = {"neuroplug": {"rows": rows, "wall": wall}}
        if algo in PAIRED and args.evotorch_python:
            peer, peer_wall = _evotorch(
                args.evotorch_python,
                algo,
                [
                    "--env",
                    "HalfCheetah-v5",
                    "--frames",
                    str(args.cheetah_frames),
                    "--seconds",
                    str(args.cheetah_seconds),
                    "--eval-episodes",
                    "5",
                    "--eval-every",
                    "5",
                    "--actors",
                    str(args.evotorch_actors),
                ],
                args.cheetah_seconds,
            )
            entry["evotorch"] = {"rows": peer, "wall": peer_wall}
        report.setdefault("halfcheetah", {})[algo] = entry
        rates = {}
        for library, data in entry.items():
            last = data["rows"][-1]
            seconds = last.get("training_seconds", last["elapsed"])
            rates[library] = last["frames"] / seconds
        for library, data in entry.items():
            last = data["rows"][-1]
            ratio = (
                f"{rates['neuroplug'] / rates['evotorch']:.1f}x"
                if library == "neuroplug" and "evotorch" in rates
                else ""
            )
            lines.append(
                f"| {algo} | {library} | {last['frames']:,} | {last['eval_return']:.0f} | "
                f"{rates[library]:,.0f} | {ratio} |"
            )
            print(lines[-1], flush=True)
    lines.append("")


def plot(report: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for task, entries in report.items():
        figure, axis = plt.subplots(figsize=(7, 4.5))
        for algo, entry in entries.items():
            for library, data in entry.items():
                points = [
                    (r["frames"], r["eval_return"])
                    for r in data["rows"]
                    if not math.isnan(r["eval_return"])
                ]
                if points:
                    style = "-" if library == "neuroplug" else "--"
                    axis.plot(*zip(*points, strict=True), style, label=f"{algo} ({library})")
        axis.set_xlabel("frames")
        axis.set_ylabel("evaluation return of the mean")
        axis.set_title(task)
        axis.legend(fontsize=7)
        figure.tight_layout()
        figure.savefig(out / f"{task}.png", dpi=110)
        plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evotorch-python", default=None)
    parser.add_argument("--evotorch-actors", type=int, default=2)
    parser.add_argument("--cartpole-seconds", type=float, default=300)
    parser.add_argument("--cheetah-frames", type=int, default=500_000)
    parser.add_argument("--cheetah-seconds", type=float, default=900)
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "halfcheetah"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    version = ""
    if args.evotorch_python:
        version = subprocess.run(
            [args.evotorch_python, "-c", "import evotorch; print(evotorch.__version__)"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    lines = [
        "# Gaussian search strategies: neuroplug against EvoTorch",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}; "
        f"EvoTorch {version or 'not run'} with {args.evotorch_actors} Ray actors. "
        "`python benchmarks/strategies.py`; one seed each.",
        "",
    ]
    report: dict = {}
    if "cartpole" in args.tasks:
        cartpole(args, lines, report)
    if "halfcheetah" in args.tasks:
        cheetah(args, lines, report)
    (args.out / "strategies.md").write_text("\n".join(lines) + "\n")
    (args.out / "strategies.json").write_text(json.dumps(report, indent=1))
    plot(report, args.out)


if __name__ == "__main__":
    main()
