"""Read offline W&B run files with W&B's own reader (its datastore and protobufs).

Used by the tests to check what was logged; handy for scripts that inspect offline runs
without uploading them. Needs a wandb release that ships ``wandb.sdk.internal.datastore``
(< 0.30).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class OfflineRun:
    """What an offline ``run-*.wandb`` file recorded."""

    config: dict[str, Any] = field(default_factory=dict)
    group: str = ""
    tags: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    artifact_types: list[str] = field(default_factory=list)
    exit_code: int | None = None


def read_offline_run(path: Path) -> OfflineRun:
    """Scan every record of one ``.wandb`` file."""
    from wandb.proto import wandb_internal_pb2
    from wandb.sdk.internal import datastore

    store = datastore.DataStore()
    store.open_for_scan(str(path))
    run = OfflineRun()
    while (data := store.scan_data()) is not None:
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.group = record.run.run_group
            run.tags = list(record.run.tags)
            for item in record.run.config.update:
                run.config[item.key] = json.loads(item.value_json)
        elif kind == "history":
            row = {}
            for item in record.history.item:
                key = item.key or "/".join(item.nested_key)
                row[key] = json.loads(item.value_json)
            run.history.append(row)
        elif kind == "artifact":
            run.artifact_types.append(record.artifact.type)
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
    return run


def offline_runs(root: Path, wait_s: float = 30.0) -> dict[Path, OfflineRun]:
    """Every offline run below ``root``, keyed by its job's run dir.

    W&B's writer process may still be flushing just after ``finish()`` returns, so each
    file is re-read until its exit record is there (or ``wait_s`` passes).
    """
    found = {}
    for path in sorted(root.rglob("offline-run-*/run-*.wandb")):
        deadline = time.monotonic() + wait_s
        run = read_offline_run(path)
        while run.exit_code is None and time.monotonic() < deadline:
            time.sleep(0.2)
            run = read_offline_run(path)
        found[path.parent.parent.parent] = run
    return found
