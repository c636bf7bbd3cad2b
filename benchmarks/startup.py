"""Start-up and whole-command time of ``python -m neuroplug``, as a user sees it.

Runs each command several times in a fresh process (in a scratch dir, W&B offline) and
reports the median seconds from launch to: the run's first line (``neuroplug: es on ...``,
printed once the config is composed and the envs, network and algorithm are built, just
before the first env step), the first generation's line, and the process's exit.

    python benchmarks/startup.py --repeats 5 --out benchmarks/results/startup.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine import describe

ROOT = Path(__file__).resolve().parent.parent
PYTHON = [sys.executable, "-m", "neuroplug"]
SCRIPT = ["bash", str(ROOT / "scripts" / "run.sh")]
"""The README's command: set-up (a no-op once done), then the venv's python."""

COMMANDS = {
    "help": (PYTHON, ["--help"]),
    "help, scripts/run.sh": (SCRIPT, ["--help"]),
    "es cartpole (W&B, the default)": (PYTHON, ["algo=es", "env=cartpole"]),
    "es cartpole, scripts/run.sh (the README's command)": (SCRIPT, ["algo=es", "env=cartpole"]),
    "es cartpole, logger=console": (PYTHON, ["algo=es", "env=cartpole", "logger=console"]),
    "a typo (fails)": (PYTHON, ["algo=ess"]),
    "a bad value (fails)": (PYTHON, ["algo=es", "algo.sigma=abc"]),
}
FAILING = {"a typo (fails)", "a bad value (fails)"}
"""Commands that must fail (exit 2, one line) before training: timed to their exit."""


def time_command(
    args: list[str], cwd: Path, launcher: list[str] = PYTHON, expected: int = 0
) -> dict[str, float]:
    """Seconds from launch to the first line, the first generation line and the exit
    (which must have status ``expected``)."""
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    started = time.perf_counter()
    process = subprocess.Popen(
        [*launcher, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env=env,
    )
    marks: dict[str, float] = {}
    for line in process.stdout:
        now = time.perf_counter() - started
        if line.startswith("neuroplug:") and "first_line" not in marks:
            marks["first_line"] = now
        if line.startswith("gen ") and "first_generation" not in marks:
            marks["first_generation"] = now
    process.wait()
    marks["exit"] = time.perf_counter() - started
    if process.returncode != expected:
        raise RuntimeError(f"{args} exited with {process.returncode}, not {expected}")
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write a Markdown table here (and .json)")
    args = parser.parse_args()
    results = {
        "machine": describe(),
        "python": platform.python_version(),
        "rows": {},
    }
    lines = [
        "| command | first line s | first generation s | whole command s (runs) |",
        "|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for name, (launcher, command) in COMMANDS.items():
            expected = 2 if name in FAILING else 0
            runs = [
                time_command(command, Path(scratch), launcher, expected)
                for _ in range(args.repeats)
            ]
            row = {
                key: statistics.median(run[key] for run in runs)
                for key in runs[0]
                if all(key in run for run in runs)
            }
            row["exit_all"] = [round(run["exit"], 2) for run in runs]
            results["rows"][name] = row
            cells = [
                f"{row[key]:.2f}" if key in row else "-"
                for key in ("first_line", "first_generation")
            ]
            exits = ", ".join(f"{value:.2f}" for value in row["exit_all"])
            shown = " ".join(
                ["scripts/run.sh" if launcher is SCRIPT else "python -m neuroplug", *command]
            )
            lines.append(
                f"| `{shown}` | {cells[0]} | {cells[1]} | **{row['exit']:.2f}** ({exits}) |"
            )
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    if args.out:
        header = (
            f"Machine: {results['machine']}; Python {results['python']}. Medians of "
            f"{args.repeats} runs, each a fresh process in a scratch dir, W&B offline.\n\n"
        )
        args.out.write_text(header + table + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
