"""Checkpoints and policies are data, not code: a planted pickle is refused by resume and replay."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from neuroplug.app import run_job
from neuroplug.training.checkpoint import (
    BEST_POLICY,
    LATEST,
    UnsafeFileError,
    atomic_save,
    checkpoint_dir,
    load_checkpoint,
    load_data,
    save_checkpoint,
)


class _RunsCode:
    """Unpickled by a full unpickler, this runs a shell command that leaves ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _cli(*arguments, cwd):
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    return subprocess.run(
        [sys.executable, *arguments], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.fixture(scope="module")
def trained(compose, tmp_path_factory):
    """A real run dir, whose files the tests copy and plant things in."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    overrides = ["logger=none", "run.max_generations=2", "run.eval_episodes=1"]
    overrides += ["algo.population_size=4", "net.hidden_sizes=[8]", f"run.output_dir={run_dir}"]
    run_job(compose(overrides))
    return run_dir


def test_what_neuroplug_writes_loads_back_with_the_weights_only_loader(trained):
    state = load_checkpoint(trained)
    assert state["generation"] == 2
    assert isinstance(state["normalizer"]["total"], np.ndarray)  # an allowed numpy type
    policy = torch.load(checkpoint_dir(trained) / BEST_POLICY, weights_only=True)  # plain torch
    assert policy["policy_params"].dtype == torch.float32
    assert policy["normalizer"]["total"].dtype == torch.float64


def test_plain_numpy_values_pass_and_object_arrays_do_not(tmp_path):
    kept = {"a": np.arange(3.0), "b": np.float64(2.5), "c": np.zeros(2, np.uint32)}
    buffer = io.BytesIO()
    torch.save(kept, buffer)
    buffer.seek(0)
    loaded = load_data(buffer)
    assert np.array_equal(loaded["a"], kept["a"]) and loaded["b"] == 2.5
    buffer = io.BytesIO()
    torch.save({"x": np.array(["text"], dtype=object)}, buffer)
    buffer.seek(0)
    with pytest.raises(UnsafeFileError, match="ObjectDType"):
        load_data(buffer, "the buffer")


def _planted(trained, tmp_path, where):
    """A copy of ``trained`` with a code-running pickle planted ``where``."""
    run_dir = tmp_path / "planted"
    shutil.copytree(trained, run_dir)
    marker = tmp_path / "code-ran"
    folder = checkpoint_dir(run_dir)
    if where == "latest file":  # the whole file replaced
        torch.save({"format_version": 2, "evil": _RunsCode(marker)}, folder / LATEST)
    elif where == "run state":  # inside a well-formed, checksummed checkpoint
        state = load_checkpoint(run_dir)
        state["algorithm"]["extra"] = _RunsCode(marker)
        save_checkpoint(run_dir, state)
    elif where == "best policy":
        policy = load_data(folder / BEST_POLICY)
        policy["normalizer"] = _RunsCode(marker)
        atomic_save(policy, folder / BEST_POLICY)
    return run_dir, marker


@pytest.mark.parametrize("where", ["latest file", "run state"])
def test_a_planted_checkpoint_is_refused_by_resume(trained, tmp_path, where):
    run_dir, marker = _planted(trained, tmp_path, where)
    with pytest.raises(UnsafeFileError, match=r"refused to load .*latest\.pt.*posix\.system"):
        load_checkpoint(run_dir)  # no fallback to previous.pt past a planted file
    done = _cli(
        "-m", "neuroplug", f"run.resume={run_dir}", "run.max_generations=3", "logger=none",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "neuroplug: error: refused to load" in done.stderr and "latest.pt" in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()


def test_a_planted_policy_is_refused_by_replay(trained, tmp_path):
    run_dir, marker = _planted(trained, tmp_path, "best policy")
    done = _cli("-m", "neuroplug.tools.watch", str(run_dir), "--episodes", "1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "refused to load" in done.stderr and BEST_POLICY in done.stderr
    assert "posix.system" in done.stderr
    assert not marker.exists()
