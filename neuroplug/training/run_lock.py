"""One run per output dir: a second run pointed at a busy dir is refused, not interleaved.

The lock is an advisory ``flock`` on ``<run dir>/.neuroplug.lock``: the operating system
drops it when the holder exits, however it exits (``kill -9`` included), so a crashed run
never leaves a stale lock behind. The file records the holder's pid and host for the
error message. Where ``fcntl`` does not exist (Windows) runs are not locked.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from neuroplug.errors import NeuroplugError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_FILE = ".neuroplug.lock"


class RunDirBusy(NeuroplugError):
    """Another live run holds this output dir."""


class RunDirLock:
    """Exclusive use of a run dir for as long as this object holds it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._stream = None

    def acquire(self) -> RunDirLock:
        """Take the lock or raise :class:`RunDirBusy` naming the holder."""
        if fcntl is None:
            return self
        stream = open(self.path, "a+")  # noqa: SIM115 - held open for the lock's lifetime
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            stream.seek(0)
            holder = stream.read().strip() or "another process"
            stream.close()
            raise RunDirBusy(
                f"run.output_dir: {self.path.parent} is in use by a running neuroplug job "
                f"({holder}); give this run another run.output_dir, or wait for that one to end"
            ) from None
        stream.seek(0)
        stream.truncate()
        stream.write(
            f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}"
        )
        stream.flush()
        self._stream = stream
        return self

    def release(self) -> None:
        """Let another run use the dir."""
        if self._stream is not None:
            fcntl.flock(self._stream.fileno(), fcntl.LOCK_UN)
            self._stream.close()
            self._stream = None
