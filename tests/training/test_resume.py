"""Checkpoint and resume: an interrupted run ends exactly where an uninterrupted one does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from neuroplug.testing import check_resume_is_exact
from neuroplug.training.checkpoint import load_checkpoint


def test_resumed_run_ends_in_the_uninterrupted_state(compose, quiet_overrides, tmp_path):
    left, _ = check_resume_is_exact(
        compose, [*quiet_overrides, "run.eval_interval=2", "net.hidden_sizes=[16]"], tmp_path
    )
    assert left["algorithm"]["generation"] == 4
    assert left["normalizer"]["count"] > 1  # observation normalization was part of the state


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1],
    ids=["ctrl-c", "sigterm", "slurm-pre-timeout-usr1"],
)
def test_a_stop_signal_writes_a_checkpoint_and_the_run_resumes(tmp_path, signum):
    """A real Ctrl-C (SIGTERM, or SLURM's pre-timeout SIGUSR1) mid-run: checkpoint written,
    clean exit, resume finishes."""
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
    done = state["generation"]
    assert f"resumed from {run_dir} at generation {done} of {done + 1}" in resumed.stdout
    # Through Hydra's overrides: the budget the command gives is taken, and said.
    assert f"this command changes run.max_generations 1000 -> {done + 1}" in resumed.stderr
    assert load_checkpoint(run_dir)["generation"] == state["generation"] + 1


def test_an_atari_run_on_kept_pools_resumes_bit_identically(compose, tmp_path):
    """ES on Breakout: pools kept across generations and evaluations, episodes started by
    the engine's seeded no-ops; the resumed run (fresh pools) ends exactly where the
    straight one (pools kept since generation 1) does, evaluations included."""
    left, _ = check_resume_is_exact(
        compose,
        [
            "algo.sigma=0.5",  # members whose actions follow the frames
            "env=breakout",
            "env.max_episode_steps=150",
            "algo.population_size=4",
            "scheduler.max_envs=2",  # lanes play several episodes a generation
            "run.eval_episodes=4",
            "run.eval_interval=1",
        ],
        tmp_path,
        generations=3,
        stop_at=2,
    )
    assert left["counters"]["frames"] > 0


def _stopped_at(generation: int, monkeypatch) -> None:
    """The next run stops as Ctrl-C stops it, once ``generation`` generations are done."""
    from neuroplug.training.trainer import Trainer

    train_unit = Trainer.train_unit

    def stopping(self):
        if self.completed == generation:
            os.kill(os.getpid(), signal.SIGUSR1)
        return train_unit(self)

    monkeypatch.setattr(Trainer, "train_unit", stopping)


def test_a_resume_continues_the_run_it_resumes_budget_and_seed_included(
    compose, tmp_path, monkeypatch, capsys
):
    from neuroplug.app import run_job

    common = ["algo.population_size=8", "net.hidden_sizes=[4]", "run.eval_episodes=1"]
    common += ["run.stop_when_solved=false", "logger=console"]
    with monkeypatch.context() as patch:
        _stopped_at(2, patch)
        summary = run_job(
            compose([*common, "run.seed=3", "run.max_generations=4", f"run.output_dir={tmp_path}"])
        )
    assert summary["status"] == "interrupted" and summary["generation"] == 2
    capsys.readouterr()

    # The documented command, with no budget: the run's own budget of 4, not the default 100.
    summary = run_job(compose([*common, "run.seed=3", f"run.resume={tmp_path}"]))
    said = capsys.readouterr()
    assert summary["generation"] == 4
    assert f"resumed from {tmp_path} at generation 2 of 4" in said.out
    assert "neuroplug: resuming" not in said.err  # nothing given differs

    # A budget given is taken and said; a seed given is not, and said.
    summary = run_job(
        compose([*common, "run.seed=5", "run.max_generations=6", f"run.resume={tmp_path}"])
    )
    said = capsys.readouterr()
    assert summary["generation"] == 6
    assert "this command changes run.max_generations 4 -> 6" in said.err
    assert "its run.seed ignored" in said.err
    assert load_checkpoint(tmp_path)["config"].count("seed: 3") == 1
