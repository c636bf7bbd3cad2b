"""The signals that stop a run cleanly (checkpoint, then stop)."""

from __future__ import annotations

import signal

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name)
)
"""Ctrl-C; SIGTERM (``kill``, a cluster's preemption); SIGUSR1 (what SLURM sends before a
job's time limit with ``--signal=B:USR1@<seconds>``)."""
