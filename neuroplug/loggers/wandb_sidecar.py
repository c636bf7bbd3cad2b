"""The process that talks to W&B for a run: ``python -m neuroplug.loggers.wandb_sidecar``.

:class:`neuroplug.loggers.wandb_logger.WandbLogger` starts it and sends it pickled
messages on its stdin: first ``("start", mode, init_kwargs, init_timeout)``, then any
number of ``("log", metrics, step)`` and ``("artifact", path, name, kind)``, and last
``("close", status)``. Importing and starting W&B takes over a second of mostly Python
work; here it runs on another core while the run imports torch and trains, instead of
in front of its first env step (a thread would hold the trainer's GIL).

If the trainer's process dies without closing (killed), stdin ends and the W&B run is
finished as failed. Terminal signals are left to the trainer, which closes the run itself.
Imports only the standard library and wandb.
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

RUN_ID_FILE = "wandb_run_id.txt"


def _say(text: str) -> None:
    print(f"neuroplug: {text}", file=sys.stderr, flush=True)


class Sidecar:
    """One W&B run, started with the online-to-offline fallback of the logger's docs."""

    def __init__(self, mode: str, init_kwargs: dict[str, Any], init_timeout: float) -> None:
        import wandb

        self.wandb = wandb
        self.init_kwargs = {
            **init_kwargs,
            "settings": wandb.Settings(init_timeout=init_timeout, console="off"),
        }
        self.run = self._start(mode)

    def _start(self, mode: str):
        try:
            return self.wandb.init(mode=mode, **self.init_kwargs)
        except Exception as error:  # no network, bad key, server trouble
            if mode != "online":
                _say(f"W&B could not start ({error}); W&B logging is off for this run")
                return None
            run_dir = Path(self.init_kwargs["dir"])
            _say(f"W&B online start failed ({error}); logging offline under {run_dir / 'wandb'}")
            # The failed start keeps its run id reserved in this process; use a new one.
            self.init_kwargs["id"] = uuid.uuid4().hex[:8]
            (run_dir / RUN_ID_FILE).write_text(self.init_kwargs["id"])
            return self._start("offline")

    def log(self, metrics: dict[str, Any], step: int) -> None:
        if self.run is not None:
            self.run.log(metrics, step=step)

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        if self.run is not None:
            self.run.log({name: self.wandb.Table(columns=columns, data=rows)}, step=step)

    def artifact(self, path: str, name: str, kind: str) -> None:
        if self.run is None or not os.path.isfile(path):
            return
        artifact = self.wandb.Artifact(f"{name}-{self.run.id}", type=kind)
        artifact.add_file(path)
        self.run.log_artifact(artifact)

    def close(self, status: str) -> None:
        if self.run is not None:
            self.run.finish(exit_code=1 if status == "failed" else 0)
            self.run = None


def serve(stream) -> None:
    """Answer the messages on ``stream`` until ``close`` or its end."""
    # Imported, and W&B's service started, before the first message arrives: a sidecar
    # started early (neuroplug.loggers.wandb_logger.prewarm) does this while the trainer
    # imports torch and composes its config.
    try:
        import wandb
    except ImportError as error:
        _say(f"W&B is not installed ({error}; pip install wandb); W&B logging is off for this run")
        while stream.read(65536):  # take the trainer's messages until it closes
            pass
        return
    try:
        wandb.setup()
    except Exception as error:  # wandb.init will report the same trouble, if it lasts
        _say(f"W&B setup failed ({error})")

    sidecar: Sidecar | None = None
    while True:
        try:
            message = pickle.load(stream)
        except EOFError:  # the trainer is gone without closing (crashed, killed), or a
            # sidecar started early was not needed after all
            if sidecar is not None:
                sidecar.close("failed")
            return
        kind, *args = message
        try:
            if kind == "start":
                sidecar = Sidecar(*args)
            elif kind == "close":
                if sidecar is not None:
                    sidecar.close(*args)
                return
            elif sidecar is not None:
                getattr(sidecar, kind)(*args)
        except Exception as error:  # W&B trouble must never reach the trainer
            _say(f"W&B {kind} failed ({error}); training goes on")


def main() -> None:
    # Ctrl-C and SLURM's signals go to the trainer, which closes this run itself.
    for name in ("SIGINT", "SIGTERM", "SIGUSR1"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    serve(sys.stdin.buffer)
    # W&B's own exit handler stops its service; then leave without tearing down the
    # interpreter's modules, which the trainer would otherwise sit waiting for.
    atexit._run_exitfuncs()
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
