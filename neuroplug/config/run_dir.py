"""Run dirs: every run gets a dir of its own, and a run removes only the dir it created.

Hydra names the default run dir by the second (``outputs/<date>/<time>_<algo>_<env>``), so
runs started together (four seeds in one shell loop) would share it and interleave their
files. :func:`claim_run_dir` is the resolver behind ``hydra.run.dir`` and ``hydra.sweep.dir``:
it creates the dir with an exclusive ``mkdir`` and, when another run already holds that
name, takes the next free one (``…_es_cartpole_2``, ``_3``, …). The dirs a process created
are remembered, so clean-up after a refused run never touches a dir another run made.

The resolver is registered with OmegaConf's cache: Hydra copies that cache into every sweep
job's config (also into a launcher's worker processes), so a sweep resolves to one dir.
"""

from __future__ import annotations

from pathlib import Path

LATEST = "latest.pt"
PREVIOUS = "previous.pt"
"""A run's newest checkpoint and the one before it, in :func:`checkpoint_dir`."""


def checkpoint_dir(run_dir: Path) -> Path:
    """Where a run keeps its checkpoints."""
    return Path(run_dir) / "checkpoints"


def no_usable_checkpoint(folder: Path, problems: list[str]) -> FileNotFoundError:
    """The error of a ``run.resume`` whose dir holds no checkpoint that loads."""
    return FileNotFoundError(
        f"run.resume: no usable checkpoint in {folder} ({'; '.join(problems)}); "
        "point run.resume at a run's output dir"
    )


def check_resumable(run_dir: Path) -> None:
    """Refuse a ``run.resume`` dir without a checkpoint file before torch is imported
    (whether a file loads is :func:`neuroplug.training.checkpoint.load_checkpoint`'s)."""
    folder = checkpoint_dir(run_dir)
    files = [folder / LATEST, folder / PREVIOUS]
    if not any(path.is_file() for path in files):
        raise no_usable_checkpoint(folder, [f"{path} does not exist" for path in files])


_claimed: dict[str, str] = {}
_created: set[Path] = set()
_claiming = True


def claim_run_dir(explicit: str | None, default: str) -> str:
    """The run dir: ``explicit`` when the user named one (created here when it did not
    exist yet), else ``default`` or, when that is taken, ``default_2``, ``default_3``, …"""
    if explicit is not None:
        claim_named_dir(explicit)
        return explicit
    if default in _claimed:
        return _claimed[default]
    if not _claiming:
        return default
    for attempt in range(1, 10_000):
        candidate = default if attempt == 1 else f"{default}_{attempt}"
        created = _create(Path(candidate))
        if created is None:  # cannot create here: Hydra's own mkdir reports why
            return default
        if created:
            _claimed[default] = candidate
            return candidate
    return default


def claim_named_dir(path: str) -> None:
    """Create the dir the user named, if it does not exist yet, as this process's own."""
    _create(Path(path))


def _create(path: Path) -> bool | None:
    """Make ``path`` with an exclusive mkdir: True if this call made it, False if it was
    there already, None if it cannot be made (no permission, say)."""
    for _ in range(5):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
        except FileExistsError:
            return False
        except FileNotFoundError:  # a refused run removed the empty parent just now: again
            continue
        except OSError:
            return None
        _created.add(path.resolve())
        return True
    return None


def created_by_this_process(path: Path) -> bool:
    """Whether this process created ``path`` (so removing it cannot take another run's files)."""
    return Path(path).resolve() in _created


def stop_claiming() -> None:
    """Resolve names without creating dirs (``--help``, ``--cfg``: nothing will run)."""
    global _claiming
    _claiming = False


def forget_claims() -> None:
    """Start a new command line in this process: its dirs are claimed afresh."""
    global _claiming
    _claimed.clear()
    _claiming = True


def remove_empty_parents(path: Path, stop_at: Path) -> None:
    """Remove the empty dirs above ``path`` up to (not including) ``stop_at``; a dir another
    run has just written into is left as it is."""
    parent = Path(path).resolve().parent
    stop_at = Path(stop_at).resolve()
    while parent != stop_at and stop_at in parent.parents:
        try:
            parent.rmdir()
        except OSError:  # not empty, or gone already
            return
        parent = parent.parent


def remove_unused_dirs() -> None:
    """Remove the dirs this process created that are still empty (nothing ran in them)."""
    here = Path.cwd().resolve()
    for path in list(_created):
        try:
            path.rmdir()
        except OSError:  # written into (or gone): not ours to judge
            continue
        _created.discard(path)
        remove_empty_parents(path, stop_at=here)
