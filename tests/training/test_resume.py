"""Checkpoint and resume: an interrupted run ends exactly where an uninterrupted one does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from neuroplug.app import run_job
from neuroplug.training.checkpoint import load_checkpoint


def _same(left, right) -> bool:
    """Deep equality for nested dicts of tensors, arrays and plain values."""
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, torch.Tensor):
        return torch.equal(left, right)
    if isinstance(left, np.ndarray):
        return np.array_equal(left, right)
    return left == right


def _assert_same_state(left: dict, right: dict) -> None:
    assert _same(left["algorithm"], right["algorithm"])
    a, b = left["algorithm"], right["algorithm"]
    assert a["generation"] == b["generation"]
    assert _same(a["rng"], b["rng"])
    assert torch.equal(a["algorithm"]["center"], b["algorithm"]["center"])
    assert torch.equal(a["algorithm"]["optimizer"]["m"], b["algorithm"]["optimizer"]["m"])
    assert torch.equal(a["best_params"], b["best_params"])
    assert a["best_fitness"] == b["best_fitness"]
    assert left["counters"] == right["counters"]
    assert np.array_equal(left["normalizer"]["total"], right["normalizer"]["total"])
    assert left["last_eval"] == right["last_eval"]


def test_resumed_run_ends_in_the_uninterrupted_state(compose, quiet_overrides, tmp_path):
    common = [
        *quiet_overrides,
        "run.stop_when_solved=false",
        "run.eval_interval=2",
        "net.hidden_sizes=[16]",
    ]
    straight = tmp_path / "straight"
    run_job(compose([*common, "run.max_generations=4", f"run.output_dir={straight}"]))
    interrupted = tmp_path / "interrupted"
    run_job(compose([*common, "run.max_generations=2", f"run.output_dir={interrupted}"]))
    assert load_checkpoint(interrupted)["generation"] == 2
    summary = run_job(compose([*common, "run.max_generations=4", f"run.resume={interrupted}"]))
    assert summary["generation"] == 4
    _assert_same_state(load_checkpoint(straight), load_checkpoint(interrupted))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_signal_writes_a_checkpoint_and_the_run_resumes(tmp_path, signum):
    """A real Ctrl-C (or SIGTERM) mid-run: checkpoint written, clean exit, resume finishes."""
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "logger=console",
        "run.stop_when_solved=false",
        "run.max_generations=1000",
        "algo.population_size=16",
        "run.eval_interval=0",
        f"run.output_dir={run_dir}",
        f"hydra.run.dir={tmp_path / 'hydra'}",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
    )
    lines = []
    deadline = time.monotonic() + 120
    for line in process.stdout:
        lines.append(line)
        if line.startswith("gen    2") or time.monotonic() > deadline:
            break
    process.send_signal(signum)
    output, _ = process.communicate(timeout=120)
    text = "".join(lines) + output
    assert process.returncode == 0, text
    assert "interrupted: checkpoint of generation" in text
    state = load_checkpoint(run_dir)
    # The signal may land before or after generation 2's checkpoint; either way the
    # checkpoint is a completed generation and the message says which.
    assert state["generation"] >= 1
    assert f"checkpoint of generation {state['generation']} written" in text
    resumed = subprocess.run(
        [
            *command[:-2],
            "run.max_generations=" + str(state["generation"] + 1),
            f"run.resume={run_dir}",
            f"hydra.run.dir={tmp_path / 'hydra2'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ},
    )
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {run_dir}" in resumed.stdout
    assert load_checkpoint(run_dir)["generation"] == state["generation"] + 1
