"""Checkpoints that survive crashes: atomic, checksummed, with the previous one kept.

- **Atomic:** a checkpoint is written to a temporary file in the same directory, flushed
  to disk, then renamed into place (``os.replace`` is atomic), so a crash mid-write never
  leaves a half-written ``latest.pt``.
- **Checked:** the run state is stored as serialised bytes (a byte tensor, written as it
  is) next to their SHA-256 and a format version; a truncated file, flipped bytes or another format are detected on load.
- **Previous kept:** before a new ``latest.pt`` goes in, the old one becomes
  ``previous.pt``; when ``latest.pt`` is missing or damaged, loading says which file was
  bad and why, and falls back to ``previous.pt``.
- **Data, not code:** every checkpoint and policy file is read with
  ``torch.load(..., weights_only=True)``, which unpickles tensors, numbers, strings and
  containers only, plus the numpy arrays of plain numbers neuroplug stores (RNG and
  normalizer states). A file that holds anything else (a pickle that would call a
  function, say) is refused unread: a shared policy or checkpoint cannot run code.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from neuroplug.config.run_dir import LATEST, PREVIOUS, checkpoint_dir, no_usable_checkpoint
from neuroplug.errors import NeuroplugError

FORMAT_VERSION = 3
BEST_POLICY = "best_policy.pt"


class CheckpointError(ValueError):
    """A checkpoint file is missing, damaged or of another format."""


class UnsafeFileError(NeuroplugError):
    """A checkpoint or policy file holds something other than data neuroplug stores."""


@functools.cache
def _allowed_numpy_types() -> list[Any]:
    """The numpy types neuroplug's files hold: arrays and scalars of bools, integers and floats."""
    import numpy as np

    try:
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _reconstruct, scalar  # type: ignore[no-redef]
    plain = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32)
    plain += (np.uint64, np.float16, np.float32, np.float64)
    dtype_classes = {type(np.dtype(kind)) for kind in plain}  # numpy 2: one class per dtype
    # bytes: the checksummed run state; pickle writes an empty one as a call to bytes().
    return [bytes, np.ndarray, _reconstruct, np.dtype, scalar, *sorted(dtype_classes, key=str)]


def load_data(source: Path | IO[bytes], name: str | None = None) -> Any:
    """``torch.load(source, weights_only=True)`` with neuroplug's numpy types allowed; a
    file holding anything else raises :class:`UnsafeFileError` naming the file and what it
    held (nothing in it has run)."""
    name = name or str(source)
    with torch.serialization.safe_globals(_allowed_numpy_types()):
        try:
            return torch.load(source, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as error:
            refused = what_was_refused(str(error))
            if refused is None:  # not a refused object: a damaged or foreign file
                raise pickle.UnpicklingError(_short_reason(str(error))) from None
            raise UnsafeFileError(
                f"refused to load {name}: it holds {refused}, which is "
                "not data neuroplug writes (tensors, numbers, strings, lists, dicts, numpy "
                "arrays of numbers); unpickling it could run arbitrary code. If you trust where "
                "it came from, load it yourself in Python: torch.load(path, weights_only=False)"
            ) from None


def _short_reason(message: str) -> str:
    """The line that says what went wrong, without torch's advice to unpickle anyway."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for index, line in enumerate(lines[:-1]):
        if line.startswith("Please file an issue") or line.endswith("WeightsUnpickler error:"):
            return lines[index + 1]
    return lines[0] if lines else "unreadable"


def what_was_refused(message: str) -> str | None:
    """The global or class torch's weights-only loader refused, out of its error message;
    None when it failed for another reason (garbage bytes, a truncated file)."""
    if "Weights only load failed" not in message:
        return None
    for pattern in (r"GLOBAL ([\w.]+)", r"but got <class '([\w.]+)'>", r"global: ([\w.]+)"):
        found = re.search(pattern, message)
        if found:
            return f"a pickled {found.group(1)}"
    return None


def _fsync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _link_as(source: Path, target: Path) -> None:
    """Make ``target`` a second name of ``source`` atomically, leaving ``source`` in place.

    Moving the old file aside first would leave a moment with no ``latest.pt`` at all: a
    crash there leaves a run that only ``previous.pt`` describes. Linking keeps both names
    valid throughout; where links are not allowed, a copy does the same.
    """
    staged = target.with_name(f".{target.name}.{os.getpid()}")
    staged.unlink(missing_ok=True)
    try:
        os.link(source, staged)
    except OSError:
        shutil.copyfile(source, staged)
    os.replace(staged, target)


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
            _link_as(path, keep_previous)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def save_checkpoint(run_dir: Path, state: dict[str, Any]) -> Path:
    """Write the run's state as its latest checkpoint (the last one becomes previous.pt)."""
    buffer = io.BytesIO()
    torch.save(_arrays_as_tensors(state), buffer)
    # The serialised state as a byte tensor, a view of the buffer: torch.save stores a
    # tensor's bytes as they are, where it pickles a bytes object through latin-1 text
    # (pickle protocol 2), half again as large and several times slower to write.
    data = torch.frombuffer(buffer.getbuffer(), dtype=torch.uint8)
    folder = checkpoint_dir(run_dir)
    payload = {
        "format_version": FORMAT_VERSION,
        "sha256": hashlib.sha256(data.numpy()).hexdigest(),
        "state": data,
    }
    atomic_save(payload, folder / LATEST, keep_previous=folder / PREVIOUS)
    return folder / LATEST


_ARRAY = "__numpy_array__"
"""The key of a one-entry dict that stands for a numpy array in a saved state."""


def _arrays_as_tensors(state: Any) -> Any:
    """``state`` with its numpy arrays of numbers as tensors (marked, to come back as
    arrays): torch.save writes a tensor's bytes as they are, and pickles an array (a
    replay buffer's frames) through latin-1 text."""
    if isinstance(state, np.ndarray) and state.dtype.kind in "biuf":
        try:
            return {_ARRAY: torch.from_numpy(np.ascontiguousarray(state))}
        except TypeError:  # a dtype torch lacks
            return state
    if isinstance(state, dict):
        return {key: _arrays_as_tensors(value) for key, value in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(_arrays_as_tensors(value) for value in state)
    return state


def _tensors_as_arrays(state: Any) -> Any:
    """Undo :func:`_arrays_as_tensors`."""
    if isinstance(state, dict):
        if state.keys() == {_ARRAY}:
            return state[_ARRAY].numpy()
        return {key: _tensors_as_arrays(value) for key, value in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(_tensors_as_arrays(value) for value in state)
    return state


def read_checkpoint(path: Path) -> dict[str, Any]:
    """One checkpoint file's state, or :class:`CheckpointError` saying what is wrong."""
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist")
    try:
        payload = load_data(path)
    except UnsafeFileError:
        raise  # never fall back past a planted file: the user must see it
    except Exception as error:
        raise CheckpointError(f"{path} is unreadable (truncated or corrupted?): {error}") from error
    if not isinstance(payload, dict) or payload.get("format_version") != FORMAT_VERSION:
        version = payload.get("format_version") if isinstance(payload, dict) else None
        raise CheckpointError(
            f"{path} has checkpoint format {version}; this neuroplug reads format {FORMAT_VERSION}"
        )
    data = payload.get("state")
    if not (
        isinstance(data, torch.Tensor)
        and data.dtype == torch.uint8
        and hashlib.sha256(data.numpy()).hexdigest() == payload.get("sha256")
    ):
        raise CheckpointError(f"{path} fails its checksum (corrupted)")
    state = load_data(io.BytesIO(data.numpy()), f"{path} (its run state)")
    return _tensors_as_arrays(state)


def existing_checkpoints(run_dir: Path) -> list[Path]:
    """The checkpoint files ``run_dir`` holds (latest first): what a resume would read."""
    folder = checkpoint_dir(run_dir)
    return [path for path in (folder / LATEST, folder / PREVIOUS) if path.exists()]


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
    raise no_usable_checkpoint(folder, problems)


def archive_of(run_dir: Path) -> dict | None:
    """The quality-diversity archive in ``run_dir``'s checkpoint (``algo=map_elites``,
    ``cma_mae``, ``pga_me``: ``state_dict`` of :class:`neuroplug.evolution.archive.Archive`),
    or None for a run without one."""
    state = load_checkpoint(run_dir).get("algorithm", {})
    return (state.get("algorithm") or {}).get("archive") if isinstance(state, dict) else None
