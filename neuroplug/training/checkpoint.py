"""Checkpoints written atomically: a crash mid-write never leaves a broken latest file.

A checkpoint is written to a temporary file in the same directory, flushed to disk, then
renamed over the old one (``os.replace`` is atomic on POSIX and Windows).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

FORMAT_VERSION = 1
LATEST = "latest.pt"
BEST_POLICY = "best_policy.pt"


def checkpoint_dir(run_dir: Path) -> Path:
    """Where a run keeps its checkpoints."""
    return Path(run_dir) / "checkpoints"


def atomic_save(payload: dict[str, Any], path: Path) -> None:
    """Write ``payload`` to ``path`` so readers see the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(payload, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def save_checkpoint(run_dir: Path, state: dict[str, Any]) -> Path:
    """Write the run's state as its latest checkpoint."""
    path = checkpoint_dir(run_dir) / LATEST
    atomic_save({"format_version": FORMAT_VERSION, **state}, path)
    return path


def load_checkpoint(run_dir: Path) -> dict[str, Any]:
    """The latest checkpoint of ``run_dir``, with a clear error when there is none."""
    path = checkpoint_dir(run_dir) / LATEST
    if not path.is_file():
        raise FileNotFoundError(
            f"run.resume: no checkpoint at {path}; point run.resume at a run's output dir"
        )
    # Our own file; it holds numpy RNG states, which the weights-only loader refuses.
    state = torch.load(path, map_location="cpu", weights_only=False)
    if state.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"run.resume: {path} has checkpoint format {state.get('format_version')}, "
            f"this neuroplug reads format {FORMAT_VERSION}"
        )
    return state
