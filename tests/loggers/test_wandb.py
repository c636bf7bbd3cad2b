"""W&B logging read back from the offline run files (tests/support/wandb_offline.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from wandb_offline import offline_runs

from neuroplug.app import run_job

OFFLINE = {
    **os.environ,
    "WANDB_MODE": "offline",
    "WANDB_ERROR_REPORTING": "false",
    "WANDB_SILENT": "true",
}
TINY = [
    "algo.population_size=4",
    "run.max_generations=2",
    "run.eval_episodes=1",
    "net.hidden_sizes=[8]",
]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """A multirun of three jobs, the middle one invalid."""
    root = tmp_path_factory.mktemp("wandb")
    sweep_dir = root / "multirun" / "2026-01-02" / "03-04-05"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "neuroplug",
            "-m",
            "logger=wandb",
            "algo.sigma=0.01,-1,0.02",
            *TINY,
            f"hydra.sweep.dir={sweep_dir}",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env=OFFLINE,
        timeout=600,
    )
    return sweep_dir, done


def test_every_valid_multirun_job_is_one_run_in_the_sweeps_group(sweep):
    sweep_dir, done = sweep
    runs = offline_runs(sweep_dir)
    assert len(runs) == 2, done.stderr[-2000:]
    assert {run.group for run in runs.values()} == {"sweep-2026-01-02_03-04-05"}
    assert sorted(run.config["algo"]["sigma"] for run in runs.values()) == [0.01, 0.02]
    for run in runs.values():
        assert {"algo=es", "env=cartpole", "backend=torch", "scheduler=threaded"} <= set(run.tags)
        assert run.config["env"]["task_id"] == "CartPole-v1"
        assert run.exit_code == 0
        assert {"checkpoint", "model"} <= set(run.artifact_types)


def test_per_generation_metrics_are_logged(sweep):
    for run in offline_runs(sweep[0]).values():
        rows = [row for row in run.history if "generation" in row]
        assert [row["generation"] for row in rows] == [1, 2]
        for key in (
            "env_steps",
            "frames",
            "forward_passes",
            "episodes",
            "return_mean",
            "return_max",
            "frames_per_second",
            "time_env",
            "time_inference",
            "time_algorithm",
        ):
            assert key in rows[-1], key
        assert rows[1]["frames"] > rows[0]["frames"] > 0


def test_a_failing_job_fails_and_the_sweep_goes_on(sweep):
    sweep_dir, done = sweep
    assert done.returncode != 0
    assert "algo.sigma: must be positive" in done.stderr
    assert any(path.name.startswith("2_") for path in offline_runs(sweep_dir))


def test_a_run_that_fails_mid_training_is_marked_failed(compose, tmp_path, monkeypatch):
    from neuroplug.training.trainer import Trainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")

    def explode(self):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(Trainer, "train_unit", explode)
    with pytest.raises(RuntimeError, match="simulated crash"):
        run_job(compose(["logger=wandb", *TINY, f"run.output_dir={tmp_path}"]))
    (run,) = offline_runs(tmp_path).values()
    assert run.exit_code == 1


def test_unreachable_wandb_falls_back_to_offline_and_training_goes_on(tmp_path):
    env = {**OFFLINE, "WANDB_API_KEY": "x" * 40, "WANDB_BASE_URL": "http://127.0.0.1:9"}
    env.pop("WANDB_MODE")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "neuroplug",
            "logger=wandb",
            "logger.mode=online",
            "logger.init_timeout=5",
            *TINY,
            f"run.output_dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("W&B online start failed") == 1
    assert "done (budget spent) after 2 generations" in done.stdout
    (run,) = offline_runs(tmp_path / "run").values()
    assert [row["generation"] for row in run.history if "generation" in row] == [1, 2]


def _sidecar(run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "neuroplug.loggers.wandb_sidecar"],
        stdin=subprocess.PIPE,
        env=OFFLINE,
    )


def test_a_trainer_that_dies_without_closing_leaves_a_failed_run_with_its_metrics(tmp_path):
    """The sidecar finishes the W&B run as failed when its stdin ends without a close
    (the trainer's process was killed), keeping what was logged."""
    import pickle

    sidecar = _sidecar(tmp_path)
    init = {"project": "neuroplug-test", "dir": str(tmp_path), "id": "died0001", "resume": "allow"}
    for message in [
        ("start", "offline", init, 30.0),
        ("log", {"generation": 1, "return_mean": 3.0}, 1),
        ("log", {"generation": 2, "return_mean": 5.0}, 2),
    ]:
        pickle.dump(message, sidecar.stdin)
    sidecar.stdin.close()  # as when the trainer's process is gone
    assert sidecar.wait(timeout=120) == 0
    (run,) = offline_runs(tmp_path).values()
    assert run.exit_code == 1
    assert [row["return_mean"] for row in run.history if "return_mean" in row] == [3.0, 5.0]


def test_a_sidecar_started_early_and_never_used_ends_without_a_run(tmp_path):
    sidecar = _sidecar(tmp_path)
    sidecar.stdin.close()
    assert sidecar.wait(timeout=120) == 0
    assert not (tmp_path / "wandb").exists()


def test_without_wandb_installed_the_sidecar_says_so_and_takes_the_metrics(tmp_path):
    import pickle

    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "wandb.py").write_text("raise ImportError('No module named wandb')\n")
    sidecar = subprocess.Popen(
        [sys.executable, "-m", "neuroplug.loggers.wandb_sidecar"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**OFFLINE, "PYTHONPATH": f"{shadow}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )
    init = {"project": "neuroplug-test", "dir": str(tmp_path), "id": "nowandb1"}
    for message in [
        ("start", "offline", init, 30.0),
        ("log", {"generation": 1}, 1),
        ("close", "finished"),
    ]:
        pickle.dump(message, sidecar.stdin)  # never a broken pipe for the trainer
    sidecar.stdin.close()
    assert sidecar.wait(timeout=60) == 0
    assert "W&B is not installed" in sidecar.stderr.read().decode()
