"""What the benchmark scripts share: a neuroplug run in a scratch dir read back as its
``metrics.csv`` rows, and one of CleanRL's scripts run from a checkout.

    from neuroplug_runs import run_cleanrl, run_neuroplug   # scripts run as benchmarks/<name>.py
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path


def run_neuroplug(overrides: list[str]) -> list[dict[str, str]]:
    """``python -m neuroplug <overrides>`` with no logger, into a scratch output dir; the
    run's ``metrics.csv`` rows (one per generation or segment)."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "neuroplug", *overrides]
        command += ["logger=none", f"run.output_dir={scratch}"]
        subprocess.run(command, check=True, capture_output=True)
        return list(csv.DictReader((Path(scratch) / "metrics.csv").open()))


def run_cleanrl(command: list[str], root: Path, threads: int = 1) -> subprocess.CompletedProcess:
    """One of CleanRL's scripts (``command``: the peers' python, the script, its
    arguments) from the checkout ``root``, on ``threads`` threads (``OMP_NUM_THREADS``; one
    unless a benchmark asks otherwise), in a scratch working dir (its ``runs/`` and
    ``videos/`` go with it)."""
    with tempfile.TemporaryDirectory() as scratch:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            cwd=scratch,
            env={"PYTHONPATH": str(root), "OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"},
        )
