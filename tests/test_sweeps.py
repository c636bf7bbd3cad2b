"""The shipped sweep configs: joblib's and Ray's launchers, the Optuna sweeper, and
``run.resume=auto`` for jobs a cluster requeues."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from wandb_offline import offline_runs

TINY = ["run.max_generations=1", "run.eval_episodes=1", "algo.population_size=4"]


def _multirun(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "neuroplug", "-m", *overrides, *TINY],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )


def test_joblib_launcher_runs_the_grid_in_parallel_as_one_wandb_group(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    sweep_dir = tmp_path / "multirun" / "2026-01-01" / "00-00-00"
    done = _multirun(
        tmp_path, "+sweep=es_sigma_grid_joblib", "logger=wandb", f"hydra.sweep.dir={sweep_dir}"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Joblib.Parallel" in done.stderr + done.stdout
    runs = offline_runs(sweep_dir)
    assert len(runs) == 6  # 3 sigmas x 2 seeds
    assert {run.group for run in runs.values()} == {"sweep-2026-01-01_00-00-00"}
    assert sorted(
        {(run.config["algo"]["sigma"], run.config["run"]["seed"]) for run in runs.values()}
    ) == [
        (0.01, 0),
        (0.01, 1),
        (0.02, 0),
        (0.02, 1),
        (0.05, 0),
        (0.05, 1),
    ]
    # W&B is in addition to the local record, never instead: the sweep can be plotted as is.
    assert len(list(sweep_dir.rglob("metrics.csv"))) == 6
    plot = subprocess.run(
        [sys.executable, "-m", "neuroplug.tools.plot", str(sweep_dir)],
        capture_output=True,
        text=True,
    )
    assert plot.returncode == 0, plot.stderr[-3000:]
    assert (sweep_dir / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_ray_launcher_runs_each_job_as_a_ray_task(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    sweep_dir = tmp_path / "sweep"
    done = _multirun(
        tmp_path,
        "+sweep=es_sigma_grid_ray",
        "logger=console",
        "net.hidden_sizes=[8]",
        "hydra.sweeper.params={algo.sigma:'0.01,0.02',run.seed:0}",
        f"hydra.sweep.dir={sweep_dir}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Initializing ray" in done.stderr + done.stdout
    jobs = sorted(path for path in sweep_dir.iterdir() if path.is_dir())
    assert len(jobs) == 2
    for job in jobs:
        assert (job / "checkpoints" / "latest.pt").exists()
        assert (job / "metrics.csv").exists()


def test_resume_auto_starts_a_fresh_job_then_continues_it_when_requeued(tmp_path):
    """What a requeued SLURM job does: the same command again, in the same dir."""
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "run.resume=auto",
        f"run.output_dir={tmp_path / 'job'}",
        "logger=console",
        "net.hidden_sizes=[8]",
        "run.stop_when_solved=false",
        "run.eval_interval=0",
        "run.eval_episodes=1",
        "algo.population_size=4",
    ]
    first = subprocess.run([*command, "run.max_generations=1"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "resumed from" not in first.stdout
    again = subprocess.run([*command, "run.max_generations=2"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "resumed from" in again.stdout and "at generation 1" in again.stdout
    assert "done (budget spent) after 2 generations" in again.stdout


def test_optuna_sweeper_maximises_the_final_evaluation_return(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
    sweep_dir = tmp_path / "optuna"
    done = _multirun(
        tmp_path,
        "+sweep=optuna_es_cartpole",
        "hydra.sweeper.n_trials=3",
        "logger=console",
        f"hydra.sweep.dir={sweep_dir}",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = yaml.safe_load((sweep_dir / "optimization_results.yaml").read_text())
    finals = []
    for job in sweep_dir.iterdir():
        if (job / "metrics.csv").is_file():
            last = (job / "metrics.csv").read_text().strip().splitlines()[-1].split(",")
            header = (job / "metrics.csv").read_text().splitlines()[0].split(",")
            finals.append(float(last[header.index("eval_return_mean")]))
    assert len(finals) == 3
    assert results["best_value"] == max(finals)
