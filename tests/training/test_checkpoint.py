"""Checkpoints survive crashes: atomic writes, checksums, the previous one as fallback."""

from __future__ import annotations

import pytest
import torch

from neuroplug.training import checkpoint
from neuroplug.training.checkpoint import (
    FORMAT_VERSION,
    LATEST,
    PREVIOUS,
    checkpoint_dir,
    load_checkpoint,
    save_checkpoint,
)


@pytest.fixture
def run_dir(tmp_path):
    save_checkpoint(tmp_path, {"generation": 1, "weights": torch.arange(1000.0)})
    save_checkpoint(tmp_path, {"generation": 2, "weights": torch.arange(1000.0) * 2})
    return tmp_path


def test_latest_and_previous_are_kept(run_dir):
    assert load_checkpoint(run_dir)["generation"] == 2
    assert checkpoint.read_checkpoint(checkpoint_dir(run_dir) / PREVIOUS)["generation"] == 1


def test_truncated_latest_is_reported_and_the_previous_one_used(run_dir, capsys):
    latest = checkpoint_dir(run_dir) / LATEST
    latest.write_bytes(latest.read_bytes()[: latest.stat().st_size // 2])
    assert load_checkpoint(run_dir)["generation"] == 1
    warning = capsys.readouterr().err
    assert f"{latest} is unreadable" in warning and "using" in warning and PREVIOUS in warning


def test_flipped_bytes_fail_the_checksum(run_dir, capsys):
    latest = checkpoint_dir(run_dir) / LATEST
    payload = torch.load(latest, weights_only=False)
    data = payload["state"].clone()
    data[len(data) // 2] ^= 0xFF
    payload["state"] = data
    torch.save(payload, latest)
    assert load_checkpoint(run_dir)["generation"] == 1
    assert f"{latest} fails its checksum" in capsys.readouterr().err


def test_another_format_version_is_named(run_dir, capsys):
    latest = checkpoint_dir(run_dir) / LATEST
    torch.save({"format_version": FORMAT_VERSION + 1, "state": b""}, latest)
    assert load_checkpoint(run_dir)["generation"] == 1
    assert f"has checkpoint format {FORMAT_VERSION + 1}" in capsys.readouterr().err


def test_no_usable_checkpoint_names_both_files(run_dir):
    for name in (LATEST, PREVIOUS):
        (checkpoint_dir(run_dir) / name).write_bytes(b"garbage")
    with pytest.raises(FileNotFoundError, match=r"no usable checkpoint.*latest\.pt.*previous\.pt"):
        load_checkpoint(run_dir)


def test_a_crash_while_writing_leaves_the_old_checkpoint_and_no_debris(run_dir, monkeypatch):
    real_save = torch.save

    def crash_midway(payload, stream):
        real_save(payload, stream)
        stream.truncate(10)
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.torch, "save", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(run_dir, {"generation": 3})
    monkeypatch.undo()
    assert load_checkpoint(run_dir)["generation"] == 2
    assert sorted(path.name for path in checkpoint_dir(run_dir).iterdir()) == [LATEST, PREVIOUS]


def test_a_crash_between_keeping_previous_and_writing_latest_leaves_latest_in_place(
    run_dir, monkeypatch
):
    # kill -9 right after the old checkpoint became previous.pt: latest.pt must still be
    # there (the old one), or a run that resumes by looking for it would start afresh.
    real_replace = checkpoint.os.replace

    def die_before_the_new_latest(source, target):
        if str(target).endswith(LATEST):
            raise KeyboardInterrupt  # the process dies here
        real_replace(source, target)

    monkeypatch.setattr(checkpoint.os, "replace", die_before_the_new_latest)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(run_dir, {"generation": 3})
    monkeypatch.undo()
    assert checkpoint.read_checkpoint(checkpoint_dir(run_dir) / LATEST)["generation"] == 2
    assert checkpoint.read_checkpoint(checkpoint_dir(run_dir) / PREVIOUS)["generation"] == 2
    assert checkpoint.existing_checkpoints(run_dir) == [
        checkpoint_dir(run_dir) / LATEST,
        checkpoint_dir(run_dir) / PREVIOUS,
    ]


def test_arrays_come_back_as_arrays_and_the_file_is_the_size_of_its_numbers(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(4, 1000, 84), dtype=np.uint8)
    state = {
        "replay": {"frames": frames, "rewards": rng.standard_normal(1000).astype(np.float32)},
        "weights": torch.randn(10_000),
        "rng": np.random.default_rng(1).bit_generator.state,
    }
    path = save_checkpoint(tmp_path, state)
    loaded = load_checkpoint(tmp_path)
    assert isinstance(loaded["replay"]["frames"], np.ndarray)
    assert loaded["replay"]["frames"].dtype == np.uint8
    assert np.array_equal(loaded["replay"]["frames"], frames)
    assert np.array_equal(loaded["replay"]["rewards"], state["replay"]["rewards"])
    assert torch.equal(loaded["weights"], state["weights"])
    assert loaded["rng"] == state["rng"]
    numbers = frames.nbytes + 4000 + 40_000
    # Stored as they are (pickled through latin-1 text they took half again as much).
    assert path.stat().st_size < numbers * 1.05 + 20_000
