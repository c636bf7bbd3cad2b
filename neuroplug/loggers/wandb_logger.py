"""Weights & Biases: one W&B run per job, never allowed to stop training.

The mode is chosen so that nothing surprising happens: ``logger.mode`` or $WANDB_MODE
when set; otherwise online when the user is logged in (WANDB_API_KEY or a ~/.netrc entry),
else offline (files under ``<run dir>/wandb``; ``wandb sync`` uploads them later). If an
online start fails — no network, a bad key — the run falls back to offline and says so
once; if even that fails, W&B is switched off for the run with one message.

In a Hydra multirun every job joins one group named after the sweep, and each run is
tagged with the chosen config groups (``algo=es``, ``env=cartpole``, ...). The W&B run id is
kept in the run dir, so a resumed run continues the same W&B run.

W&B itself runs in a helper process (:mod:`neuroplug.loggers.wandb_sidecar`), started
here and fed the metrics through a pipe, so its start never delays training.
"""

from __future__ import annotations

import atexit
import netrc
import os
import pickle
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuroplug.config.schema import LoggerConfig
from neuroplug.loggers.base import Logger

# The run id file is shared with the sidecar, which rewrites it after an online fallback.
from neuroplug.loggers.wandb_sidecar import RUN_ID_FILE

if TYPE_CHECKING:
    from neuroplug.experiment.typed import Experiment

TAGGED_GROUPS = ("algo", "env", "net", "backend", "scheduler")


def _logged_in() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def choose_mode(configured: str | None) -> str:
    """The W&B mode to start in (see the module docstring)."""
    if configured:
        return configured
    if os.environ.get("WANDB_MODE"):
        return os.environ["WANDB_MODE"]
    return "online" if _logged_in() else "offline"


def hydra_identity() -> tuple[str | None, str | None, list[str]]:
    """(sweep group, job name, tags) of the current Hydra job; (None, None, []) outside Hydra."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return None, None, []
    hydra = HydraConfig.get()
    choices = hydra.runtime.choices
    tags = [f"{group}={choices[group]}" for group in TAGGED_GROUPS if choices.get(group)]
    if hydra.mode == RunMode.MULTIRUN:
        # The job's dir is <sweep dir>/<subdir>: read back, not resolved again.
        sweep = Path(hydra.runtime.output_dir).parent
        group = (
            f"sweep-{sweep.parent.name}_{sweep.name}"
            if sweep.parent.name
            else f"sweep-{sweep.name}"
        )
        name = (
            f"{hydra.job.num}_{hydra.job.override_dirname}"
            if hydra.job.override_dirname
            else str(hydra.job.num)
        )
        return group, name, tags
    return None, None, tags


_prewarmed: subprocess.Popen | None = None


def _start_sidecar() -> subprocess.Popen:
    # Its own session: Ctrl-C and SLURM's signals reach the trainer, which closes the
    # W&B run in order; a trainer that dies ends the sidecar's stdin, which finishes it.
    return subprocess.Popen(
        [sys.executable, "-m", "neuroplug.loggers.wandb_sidecar"],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )


def prewarm() -> None:
    """Start a sidecar now, for the W&B logger the command will probably build: it imports
    W&B on another core while this process imports torch and composes the config. One not
    taken by a logger is stopped at exit, before it started any W&B run."""
    global _prewarmed
    if _prewarmed is None:
        _prewarmed = _start_sidecar()
        atexit.register(_release_prewarmed)


def _release_prewarmed() -> None:
    """Stop a prewarmed sidecar no logger took (a run refused at validation, say): it has
    no W&B run to finish, so it is not waited for while it still imports W&B."""
    global _prewarmed
    process, _prewarmed = _prewarmed, None
    if process is not None:
        process.kill()
        process.wait()


def _take_sidecar() -> subprocess.Popen:
    """The prewarmed sidecar if there is one, else a new one."""
    global _prewarmed
    process, _prewarmed = _prewarmed, None
    return process if process is not None and process.poll() is None else _start_sidecar()


class WandbLogger(Logger):
    """Sends per-generation (per-segment) metrics, the resolved config and artifacts to one
    W&B run, through the W&B sidecar process; ``metrics[unit]`` is W&B's step."""

    def __init__(
        self, settings: LoggerConfig, run_dir: Path, config: Experiment, unit: str = "generation"
    ) -> None:
        self.settings = settings
        self.unit = unit
        self.run_dir = run_dir
        group, name, tags = hydra_identity()
        id_file = run_dir / RUN_ID_FILE
        run_id = id_file.read_text().strip() if id_file.is_file() else uuid.uuid4().hex[:8]
        id_file.write_text(run_id)
        init_kwargs: dict[str, Any] = {
            "project": settings.project,
            "entity": settings.entity,
            "group": settings.group or group,
            "name": name,
            "tags": tags,
            "config": config.as_dict(),
            "dir": str(run_dir),
            "id": run_id,
            "resume": "allow",
            "job_type": "train",
        }
        self.process: subprocess.Popen | None = _take_sidecar()
        self._send("start", choose_mode(settings.mode), init_kwargs, settings.init_timeout)

    def _send(self, *message: Any) -> None:
        if self.process is None:
            return
        pickle.dump(message, self.process.stdin)
        self.process.stdin.flush()

    def log(self, metrics: dict[str, Any]) -> None:
        self._send("log", metrics, int(metrics[self.unit]))

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        self._send("table", name, columns, rows, step)

    def artifact(self, path: Path, name: str, kind: str) -> None:
        if self.settings.log_artifacts and path.is_file():
            self._send("artifact", str(path), name, kind)

    def close(self, status: str = "finished") -> None:
        """Finish the W&B run and wait for the sidecar to write it out."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            pickle.dump(("close", status), process.stdin)
            process.stdin.close()
        except OSError:  # the sidecar is already gone
            pass
        process.wait()
