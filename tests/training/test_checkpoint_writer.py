"""Large checkpoints are written beside the next unit: one at a time, in order, errors
raised at the next wait, and a run whose checkpoints go to the background resumes exactly."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from neuroplug.testing import check_resume_is_exact
from neuroplug.training import checkpoint_writer
from neuroplug.training.checkpoint_writer import CheckpointWriter, state_bytes


def test_state_bytes_counts_tensors_arrays_and_bytes_inside_containers():
    state = {
        "a": torch.zeros(10, dtype=torch.float64),
        "b": [np.zeros(4, dtype=np.float32), (b"xyz", 3, "text")],
        "c": None,
    }
    assert state_bytes(state) == 80 + 16 + 3


def _writer(written, sizes, seconds, background_bytes=10):
    return CheckpointWriter(written.append, sizes.append, seconds.append, background_bytes)


def test_a_small_state_is_written_at_once_and_a_large_one_in_the_background():
    written, sizes, seconds = [], [], []
    writer = _writer(written, sizes, seconds)
    small, large = {"x": torch.zeros(1)}, {"x": torch.zeros(100)}
    writer.write(small)
    assert written == [small] and sizes == [] and len(seconds) == 1
    release = threading.Event()
    writer._write = lambda state: (release.wait(10), written.append(state))
    writer.write(large)
    assert writer.writing and sizes == [400] and written == [small]
    release.set()
    writer.wait()
    assert not writer.writing and written == [small, large] and len(seconds) == 2


def test_the_next_write_waits_for_the_one_in_flight_so_they_land_in_order():
    order = []
    release = threading.Event()

    def write(state):
        if state["n"] == 0:
            release.wait(10)
        order.append(state["n"])

    writer = CheckpointWriter(write, lambda size: None, lambda seconds: None, 0)
    writer.write({"n": 0, "x": torch.zeros(4)})
    threading.Timer(0.05, release.set).start()
    writer.write({"n": 1, "x": torch.zeros(4)})
    writer.wait()
    assert order == [0, 1]


def test_an_error_in_the_background_is_raised_at_the_next_wait():
    def full_disk(state):
        raise OSError(28, "No space left on device")

    writer = CheckpointWriter(full_disk, lambda size: None, lambda seconds: None, 0)
    writer.write({"x": torch.zeros(4)})
    with pytest.raises(OSError, match="No space left"):
        writer.wait()
    writer.wait()  # said once


def test_a_run_whose_checkpoints_are_written_in_the_background_resumes_exactly(
    compose, tmp_path, monkeypatch
):
    monkeypatch.setattr(checkpoint_writer, "BACKGROUND_BYTES", 0)
    in_background = []
    original = CheckpointWriter._in_background

    def counted(self, state):
        in_background.append(state["generation"])
        original(self, state)

    monkeypatch.setattr(CheckpointWriter, "_in_background", counted)
    check_resume_is_exact(
        compose,
        ["algo=cma_es", "algo.population_size=8", "net.hidden_sizes=[4]", "run.eval_episodes=2"],
        tmp_path,
        generations=5,
        stop_at=2,
    )
    assert len(in_background) >= 5  # the two runs' and the resumed one's checkpoints
