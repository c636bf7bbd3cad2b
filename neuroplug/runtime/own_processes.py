"""The run's own helper processes, whose CPU time is the run's work, not another's load.

The automatic torch thread count (:class:`neuroplug.runtime.devices.TorchThreads`) takes one
thread while other programs want the cores. The env worker processes a run starts
(:mod:`neuroplug.envs.gymnasium_workers`) step its envs while it acts and rest while it
learns: their CPU time is the run's own, and reading it as another program's load kept a
learner on one thread (multi-agent Pong on two cores:
``benchmarks/results/parity/ppo/pong_v3/speed_whole_machine_2026-12-07.md``). Processes
that run beside the learning whatever it does (ViZDoom's multiplayer engines, which keep
game time together) are not registered: they want the cores the learner would take (with
them counted as the run's own, a duel's players once stopped answering under load).
Imports nothing heavy: the workers are registered from the parent.
"""

from __future__ import annotations

import os
import time

_helpers: dict[int, float] = {}
"""Each registered process's CPU seconds when last read (kept once it ends)."""


def count_as_own(pid: int) -> None:
    """Count process ``pid`` (a helper this run started) as the run's own work."""
    _helpers.setdefault(pid, 0.0)


def own_cpu_seconds() -> float:
    """CPU seconds this process and its registered helper processes have used."""
    for pid in _helpers:
        used = _cpu_seconds(pid)
        if used is not None:  # an ended helper keeps what it used
            _helpers[pid] = used
    return time.process_time() + sum(_helpers.values())


def _cpu_seconds(pid: int) -> float | None:
    """Process ``pid``'s user and system CPU seconds (``/proc/<pid>/stat``); None where it
    cannot be read (it ended, or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            text = stream.read()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command's name
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
