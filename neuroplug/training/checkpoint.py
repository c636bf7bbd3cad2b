"""Checkpoints that survive crashes: atomic, checksummed, with the previous one kept.

- **Atomic:** a checkpoint is written to a temporary file in the same directory, flushed
  to disk, then renamed into place (``os.replace`` is atomic), so a crash mid-write never
  leaves a half-written ``latest.pt``.
- **Checked:** the run state is stored as serialised bytes next to their SHA-256 and a
  format version; a truncated file, flipped bytes or another format are detected on load.
- **Previous kept:** before a new ``latest.pt`` goes in, the old one becomes
  ``previous.pt``; when ``latest.pt`` is missing or damaged, loading says which file was
  bad and why, and falls back to ``previous.pt``.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

FORMAT_VERSION = 2
LATEST = "latest.pt"
PREVIOUS = "previous.pt"
BEST_POLICY = "best_policy.pt"


class CheckpointError(ValueError):
    """A checkpoint file is missing, damaged or of another format."""


def checkpoint_dir(run_dir: Path) -> Path:
    """Where a run keeps its checkpoints."""
    return Path(run_dir) / "checkpoints"


def _fsync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def atomic_save(payload: dict[str, Any], path: Path, keep_previous: Path | None = None) -> None:
    """Write ``payload`` to ``path`` so readers see the old file or the new, never half.

    With ``keep_previous``, the file being replaced is first moved there.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(payload, stream)
            stream.flush()
            os.fsync(stream.fileno())
        if keep_previous is not None and path.exists():
            os.replace(path, keep_previous)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def save_checkpoint(run_dir: Path, state: dict[str, Any]) -> Path:
    """Write the run's state as its latest checkpoint (the last one becomes previous.pt)."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()
    folder = checkpoint_dir(run_dir)
    payload = {
        "format_version": FORMAT_VERSION,
        "sha256": hashlib.sha256(data).hexdigest(),
        "state": data,
    }
    atomic_save(payload, folder / LATEST, keep_previous=folder / PREVIOUS)
    return folder / LATEST


def read_checkpoint(path: Path) -> dict[str, Any]:
    """One checkpoint file's state, or :class:`CheckpointError` saying what is wrong."""
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist")
    try:
        # Our own file; the state holds numpy RNG states, which the weights-only loader refuses.
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as error:
        raise CheckpointError(f"{path} is unreadable (truncated or corrupted?): {error}") from error
    if not isinstance(payload, dict) or payload.get("format_version") != FORMAT_VERSION:
        version = payload.get("format_version") if isinstance(payload, dict) else None
        raise CheckpointError(
            f"{path} has checkpoint format {version}; this neuroplug reads format {FORMAT_VERSION}"
        )
    data = payload.get("state")
    if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != payload.get("sha256"):
        raise CheckpointError(f"{path} fails its checksum (corrupted)")
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)


def load_checkpoint(run_dir: Path) -> dict[str, Any]:
    """The newest good checkpoint of ``run_dir``: latest.pt, else previous.pt (with a warning)."""
    folder = checkpoint_dir(run_dir)
    problems = []
    for name in (LATEST, PREVIOUS):
        try:
            state = read_checkpoint(folder / name)
        except CheckpointError as error:
            problems.append(str(error))
            continue
        if problems:
            print(f"neuroplug: warning: {problems[0]}; using {folder / name}", file=sys.stderr)
        return state
    raise FileNotFoundError(
        f"run.resume: no usable checkpoint in {folder} ({'; '.join(problems)}); "
        "point run.resume at a run's output dir"
    )
