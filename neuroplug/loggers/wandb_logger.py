"""Weights & Biases: one W&B run per job, never allowed to stop training.

The mode is chosen so that nothing surprising happens: ``logger.mode`` or $WANDB_MODE
when set; otherwise online when the user is logged in (WANDB_API_KEY or a ~/.netrc entry),
else offline (files under ``<run dir>/wandb``; ``wandb sync`` uploads them later). If an
online start fails — no network, a bad key — the run falls back to offline and says so
once; if even that fails, W&B is switched off for the run with one message.

In a Hydra multirun every job joins one group named after the sweep, and each run is
tagged with the chosen config groups (``algo=es``, ``env=cartpole``, ...). The W&B run id is
kept in the run dir, so a resumed run continues the same W&B run.
"""

from __future__ import annotations

import netrc
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neuroplug.config.schema import LoggerConfig
from neuroplug.loggers.base import Logger

if TYPE_CHECKING:
    from neuroplug.experiment import Experiment

RUN_ID_FILE = "wandb_run_id.txt"
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
        sweep = Path(hydra.sweep.dir)
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


class WandbLogger(Logger):
    """Sends per-generation metrics, the resolved config and artifacts to one W&B run."""

    def __init__(self, settings: LoggerConfig, run_dir: Path, config: Experiment) -> None:
        import wandb

        self.wandb = wandb
        self.settings = settings
        self.run_dir = run_dir
        group, name, tags = hydra_identity()
        id_file = run_dir / RUN_ID_FILE
        run_id = id_file.read_text().strip() if id_file.is_file() else uuid.uuid4().hex[:8]
        id_file.write_text(run_id)
        self.init_kwargs: dict[str, Any] = {
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
            "settings": wandb.Settings(init_timeout=settings.init_timeout, console="off"),
        }
        self.run = self._start(choose_mode(settings.mode))

    def _start(self, mode: str):
        try:
            return self.wandb.init(mode=mode, **self.init_kwargs)
        except Exception as error:  # no network, bad key, server trouble
            if mode != "online":
                self._say(f"W&B could not start ({error}); W&B logging is off for this run")
                return None
            self._say(
                f"W&B online start failed ({error}); logging offline under {self.run_dir / 'wandb'}"
            )
            # The failed start keeps its run id reserved in this process; use a new one.
            self.init_kwargs["id"] = uuid.uuid4().hex[:8]
            (self.run_dir / RUN_ID_FILE).write_text(self.init_kwargs["id"])
            return self._start("offline")

    @staticmethod
    def _say(text: str) -> None:
        print(f"neuroplug: {text}", file=sys.stderr, flush=True)

    def log(self, metrics: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.log(metrics, step=int(metrics["generation"]))

    def artifact(self, path: Path, name: str, kind: str) -> None:
        if self.run is None or not self.settings.log_artifacts or not path.is_file():
            return
        artifact = self.wandb.Artifact(f"{name}-{self.run.id}", type=kind)
        artifact.add_file(str(path))
        self.run.log_artifact(artifact)

    def close(self, status: str = "finished") -> None:
        if self.run is not None:
            self.run.finish(exit_code=1 if status == "failed" else 0)
            self.run = None
