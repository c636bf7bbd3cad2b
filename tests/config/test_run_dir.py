"""Run dirs: every run gets its own, and a run removes only what it created."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from neuroplug.app import discard_untouched_run_dir
from neuroplug.config import run_dir
from neuroplug.training.run_lock import RunDirLock

TINY = [
    "algo=es",
    "env=cartpole",
    "algo.population_size=8",
    "net.hidden_sizes=[8]",
    "run.max_generations=3",
    "run.eval_interval=0",
    "run.eval_episodes=1",
    "run.stop_when_solved=false",
    "logger=console",
]


def _environment():
    return {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}


def _all_at_once(commands: list[list[str]], cwd) -> None:
    """Start every ``python -m neuroplug <arguments>`` together; each must succeed."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "neuroplug", *arguments],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_environment(),
        )
        for arguments in commands
    ]
    for process in started:
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr


def test_a_taken_name_gets_the_next_free_one_and_a_process_keeps_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir.forget_claims()
    first = run_dir.claim_run_dir(None, "outputs/12-00-00_es_cartpole")
    assert run_dir.claim_run_dir(None, "outputs/12-00-00_es_cartpole") == first  # resolved again
    run_dir.forget_claims()  # as another process would
    second = run_dir.claim_run_dir(None, "outputs/12-00-00_es_cartpole")
    assert (first, second) == ("outputs/12-00-00_es_cartpole", "outputs/12-00-00_es_cartpole_2")
    assert run_dir.created_by_this_process(tmp_path / second)
    run_dir.forget_claims()


def test_clean_up_removes_only_an_untouched_dir_this_process_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir.forget_claims()
    others = tmp_path / "outputs" / "others"
    (others / ".hydra").mkdir(parents=True)  # another run's, just started
    (others / "config.yaml").write_text("run: {}\n")
    discard_untouched_run_dir(others)
    assert (others / ".hydra").is_dir() and (others / "config.yaml").is_file()

    mine = tmp_path / run_dir.claim_run_dir(None, "outputs/mine")
    (mine / ".hydra").mkdir()
    held = RunDirLock(mine).acquire()  # another run joined the dir and holds it
    discard_untouched_run_dir(mine)
    assert (mine / ".hydra").is_dir()
    held.release()
    discard_untouched_run_dir(mine)
    assert not mine.exists() and (tmp_path / "outputs" / "others").is_dir()
    run_dir.forget_claims()


def test_runs_started_together_from_one_directory_each_get_their_own_dir(tmp_path):
    # Eight seeds at once, all asking for the same default name (as runs started in the same
    # second do): each finishes in its own dir with a clean record, and nothing is deleted.
    same_name = "hydra.run.dir=${neuroplug.run_dir:null,outputs/same_second_es_cartpole}"
    _all_at_once([[*TINY, f"run.seed={seed}", same_name] for seed in range(8)], tmp_path)
    dirs = sorted((tmp_path / "outputs").iterdir())
    assert [path.name for path in dirs] == sorted(
        ["same_second_es_cartpole"] + [f"same_second_es_cartpole_{n}" for n in range(2, 9)]
    )
    seeds = set()
    for path in dirs:
        with (path / "metrics.csv").open() as stream:
            generations = [int(row["generation"]) for row in csv.DictReader(stream)]
        assert generations == [1, 2, 3]
        assert (path / ".hydra" / "overrides.yaml").is_file() and (path / "config.yaml").is_file()
        seeds.add(
            next(
                line for line in (path / "config.yaml").read_text().splitlines() if "seed:" in line
            )
        )
    assert len(seeds) == 8


def test_a_resume_leaves_no_stray_run_dir(tmp_path):
    for extra in (["run.output_dir=first"], ["run.max_generations=4", "run.resume=first"]):
        done = subprocess.run(
            [sys.executable, "-m", "neuroplug", *TINY, *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=_environment(),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["first"]  # no outputs/<date>/…


def test_sweeps_started_together_each_get_their_own_sweep_dir(tmp_path):
    same_name = "hydra.sweep.dir=${neuroplug.run_dir:null,multirun/same_second}"
    _all_at_once([["-m", *TINY, "run.seed=0,1", same_name] for _ in range(2)], tmp_path)
    for name in ("same_second", "same_second_2"):
        jobs = sorted(
            path.name[:2] for path in (tmp_path / "multirun" / name).iterdir() if path.is_dir()
        )
        assert jobs == ["0_", "1_"]
    assert not (tmp_path / "outputs").exists()
