"""Every Gaussian search strategy (cma_es, sep_cma_es, pgpe, snes, xnes) through the run
the command line makes: it trains CartPole, resumes exactly, and agrees on every scheduler."""

from __future__ import annotations

import pytest
from neuroplug_algorithms.gaussian_search import default_population_size, nes_utilities

from neuroplug.app import run_job
from neuroplug.testing import check_resume_is_exact
from neuroplug.testing.resume_check import same
from neuroplug.training.checkpoint import load_checkpoint

STRATEGIES = ["cma_es", "sep_cma_es", "pgpe", "snes", "xnes"]
SMALL = ["env=cartpole", "net.hidden_sizes=[16]", "logger=none"]


@pytest.mark.parametrize("algo", STRATEGIES)
def test_each_strategy_solves_cartpole_with_its_papers_defaults(algo, compose, tmp_path):
    # 2026-11-27 (Zen 5 EPYC): solved at generation 6-21 (pgpe last), 17k-66k frames.
    overrides = [f"algo={algo}", *SMALL, "run.max_generations=40", "run.eval_interval=5"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["eval_return_mean"] >= 475, summary


@pytest.mark.parametrize("algo", STRATEGIES)
def test_each_strategy_resumes_exactly(algo, compose, tmp_path):
    overrides = [f"algo={algo}", *SMALL, "algo.population_size=8", "run.eval_interval=2"]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path, generations=4, stop_at=2)
    assert left["generation"] == 4


@pytest.mark.parametrize("algo", ["cma_es", "sep_cma_es"])
def test_every_scheduler_ends_in_the_same_state(algo, compose, tmp_path):
    # sep_cma_es's members are described (a std per parameter), cma_es's materialised.
    states = {}
    for scheduler in ("serial", "threaded", "pipelined"):
        run_dir = tmp_path / scheduler
        overrides = [f"algo={algo}", *SMALL, f"scheduler={scheduler}", "scheduler.max_envs=5"]
        overrides += ["run.max_generations=2", "run.eval_episodes=2", "backend.batching=tiles"]
        run_job(compose([*overrides, f"run.output_dir={run_dir}"]))
        states[scheduler] = load_checkpoint(run_dir)
    for scheduler in ("threaded", "pipelined"):
        for key in ("algorithm", "counters", "last_eval"):
            assert same(states["serial"][key], states[scheduler][key]), (scheduler, key)


def test_the_papers_population_and_utilities():
    assert [default_population_size(d) for d in (2, 10, 4610, 71942)] == [6, 10, 29, 37]
    utilities = nes_utilities(6)
    assert abs(utilities.sum()) < 1e-12 and list(utilities) == sorted(utilities, reverse=True)
    assert (utilities[3:] == -1 / 6).all()  # the worse half gets no weight above the mean
