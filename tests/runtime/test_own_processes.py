"""The run's own helper processes: their CPU time is the run's work, not others' load."""

from __future__ import annotations

import subprocess
import sys
import time

from neuroplug.runtime import own_processes

SPIN = (
    "import sys, time\nwhile time.process_time() < 0.5: pass\n"
    "print(1, flush=True)\nsys.stdin.read()"
)
"""A child that spends half a second of CPU, says so, and waits."""


def _spinning_child() -> subprocess.Popen:
    child = subprocess.Popen(
        [sys.executable, "-c", SPIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline() == "1\n"  # it spent 0.5 s of CPU and waits, alive
    return child


def _helpers_seconds() -> float:  # the run's own CPU time less this process's
    return own_processes.own_cpu_seconds() - time.process_time()


def test_a_registered_helper_counts_while_it_runs_and_after_it_ended():
    before = _helpers_seconds()
    child = _spinning_child()
    own_processes.count_as_own(child.pid)
    assert _helpers_seconds() - before >= 0.45
    child.communicate("")  # ended and reaped: what it used stays counted
    assert _helpers_seconds() - before >= 0.45


def test_a_child_nobody_registered_is_another_s_load():
    """ViZDoom's multiplayer engines are the run's children but run beside its learning
    whatever it does: they want the cores, and are not the run's own work."""
    before = _helpers_seconds()
    child = _spinning_child()
    try:
        assert _helpers_seconds() - before < 0.25
    finally:
        child.communicate("")
