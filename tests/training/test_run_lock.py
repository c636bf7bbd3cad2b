"""Two runs pointed at one output dir: the second is refused, the first is untouched."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neuroplug.training.run_lock import RunDirBusy, RunDirLock


def test_a_second_lock_on_the_same_dir_is_refused_until_released(tmp_path):
    first = RunDirLock(tmp_path).acquire()
    with pytest.raises(
        RunDirBusy, match=r"run.output_dir: .* is in use by a running neuroplug job \(pid"
    ):
        RunDirLock(tmp_path).acquire()
    first.release()
    RunDirLock(tmp_path).acquire().release()


def test_a_second_run_on_a_busy_dir_fails_and_the_first_finishes(tmp_path):
    run_dir = tmp_path / "run"
    common = [
        sys.executable,
        "-m",
        "neuroplug",
        "logger=console",
        "algo.population_size=8",
        "run.eval_episodes=1",
        f"run.output_dir={run_dir}",
        "run.stop_when_solved=false",
    ]
    first = subprocess.Popen(
        [*common, "run.max_generations=15"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    for line in first.stdout:
        if line.startswith("gen "):
            break
    second = subprocess.run(
        [*common, "run.max_generations=2"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    rest, _ = first.communicate(timeout=300)
    assert second.returncode != 0
    assert "is in use by a running neuroplug job" in second.stderr
    assert "gen " not in second.stdout
    assert first.returncode == 0, rest
    rows = (run_dir / "metrics.csv").read_text().splitlines()[1:]
    assert [int(float(row.split(",")[0])) for row in rows] == list(range(1, 16))
    # The lock went with the first process: the dir can be resumed now.
    again = subprocess.run(
        [*common, "run.max_generations=16", f"run.resume={run_dir}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
