"""Both families on a real two-raylet Ray cluster on this machine, started as docs/ray.md's
recipe starts one: ``ray start --head``, then ``ray start --address=...`` with
``RAY_AUTH_MODE=token`` (Ray >= 2.60 turns token authentication on at the head; the token
file is shared here, as it is copied to every node of a real cluster)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from neuroplug.errors import ConfigError  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A head raylet and a second raylet, one CPU each; yields the head's address."""
    if ray.is_initialized():
        ray.shutdown()
    # The command line installed beside this interpreter (a venv's bin need not be on PATH).
    beside = Path(sys.executable).with_name("ray")
    command = str(beside) if beside.exists() else shutil.which("ray")
    if command is None:
        pytest.skip("the ray command line is not installed")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--disable-usage-stats"]
    head = [command, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1"]
    subprocess.run([*head, "--include-dashboard=false", *common], check=True, capture_output=True)
    try:
        subprocess.run(
            [command, "start", f"--address={address}", "--node-ip-address=127.0.0.1", *common],
            check=True,
            capture_output=True,
            env={**os.environ, "RAY_AUTH_MODE": "token"},
        )
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([command, "stop", "--force"], capture_output=True)


def _run(
    address: str, overrides: list[str], tmp_path, **environment
) -> subprocess.CompletedProcess:
    """``python -m neuroplug`` joining the cluster, as a user runs it on the head node."""
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        *overrides,
        "scheduler=ray",
        f"scheduler.address={address}",
        "scheduler.num_workers=2",
        "logger=none",
        f"run.output_dir={tmp_path}",
    ]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **environment},
    )


# Two workers of one CPU each on two raylets of one CPU each: a run that finishes has
# placed one worker on each (Ray would wait forever for a second CPU on one node).
@pytest.mark.parametrize(
    "overrides",
    [
        ["algo=ppo", "env=cartpole", "run.max_frames=2048", "algo.segment_steps=1024"],
        ["algo=es", "env=cartpole", "algo.population_size=8", "run.max_generations=1"],
    ],
    ids=["learner", "evolution"],
)
def test_both_families_run_across_both_raylets(cluster, tmp_path, overrides):
    done = _run(cluster, overrides, tmp_path, RAY_AUTH_MODE="token")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "metrics.csv").exists()


def test_joining_a_token_cluster_without_the_token_mode_says_what_to_set(monkeypatch):
    # What ray.init raises there (seen against this module's cluster with RAY_AUTH_MODE
    # unset, after ~20 s of Ray's retries): a ConnectionError caused by InvalidAuthToken.
    from neuroplug_ray import scheduler

    def refused(**_):
        try:
            raise ray.exceptions.AuthenticationError("RPC error: InvalidAuthToken: missing")
        except ray.exceptions.AuthenticationError as cause:
            raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:6379") from cause

    monkeypatch.setattr(scheduler.socket, "create_connection", lambda *a, **k: nullcontext())
    monkeypatch.setattr(ray, "init", refused)
    with pytest.raises(ConfigError) as caught:
        scheduler._join(ray, "127.0.0.1:6379")
    message = str(caught.value)
    assert message.startswith("scheduler.address: the cluster at 127.0.0.1:6379 uses token")
    assert "RAY_AUTH_MODE=token" in message
