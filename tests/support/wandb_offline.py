"""Read W&B's offline run files (``run-*.wandb``) back, for the tests only.

Such a file is a LevelDB-style log (github.com/google/leveldb/blob/main/doc/log_format.md)
of W&B's ``Record`` protobufs, which every wandb release still ships: a 7-byte header
(``:W&B``, magic 0xBEE1, version 0), then 32 KiB blocks of chunks, each
``crc32 (u32) | length (u16) | type (u8) | data``, where a record too long for what is left
of a block is split into FIRST, MIDDLE... LAST chunks. wandb 0.30 dropped its Python reader
of this format (it moved to the Go core), so the tests read it themselves.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)
BLOCK = 32768
CHUNK_HEADER = struct.Struct("<IHB")
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """What an offline ``run-*.wandb`` file recorded."""

    config: dict[str, Any] = field(default_factory=dict)
    group: str = ""
    tags: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    artifact_types: list[str] = field(default_factory=list)
    exit_code: int | None = None


def log_records(data: bytes) -> list[bytes]:
    """The whole records of one log file; a chunk cut off by a writer still at work ends it."""
    if data[: len(HEADER)] != HEADER:
        raise ValueError("not a W&B offline run file (bad header)")
    records, pending, at = [], b"", len(HEADER)
    while True:
        left_in_block = BLOCK - at % BLOCK
        if left_in_block < CHUNK_HEADER.size:  # the block's tail is zero padding
            at += left_in_block
        if at + CHUNK_HEADER.size > len(data):
            return records
        checksum, length, kind = CHUNK_HEADER.unpack_from(data, at)
        chunk = data[at + CHUNK_HEADER.size : at + CHUNK_HEADER.size + length]
        if len(chunk) < length or zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum:
            return records  # still being written
        at += CHUNK_HEADER.size + length
        if kind == FULL:
            records.append(chunk)
        elif kind == FIRST:
            pending = chunk
        elif kind == MIDDLE:
            pending += chunk
        elif kind == LAST:
            records.append(pending + chunk)
            pending = b""
        else:
            raise ValueError(f"unknown chunk type {kind} at byte {at}")


def read_offline_run(path: Path) -> OfflineRun:
    """Every record of one ``.wandb`` file, decoded with W&B's own protobufs."""
    from wandb.proto import wandb_internal_pb2

    run = OfflineRun()
    for data in log_records(Path(path).read_bytes()):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.group = record.run.run_group
            run.tags = list(record.run.tags)
            for item in record.run.config.update:
                run.config[item.key] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
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
    for path in sorted(Path(root).rglob("offline-run-*/run-*.wandb")):
        deadline = time.monotonic() + wait_s
        run = read_offline_run(path)
        while run.exit_code is None and time.monotonic() < deadline:
            time.sleep(0.2)
            run = read_offline_run(path)
        found[path.parent.parent.parent] = run
    return found
