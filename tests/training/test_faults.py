"""Faults during a run: NaN networks, a crashing simulator, a failing logger."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.api import EvaluationRequest
from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_spec
from neuroplug.evaluation.lockstep import LockstepScheduler
from neuroplug.evaluation.schedulers import ThreadedScheduler, serial_config
from neuroplug.experiment.network_choice import build_network
from neuroplug.experiment.typed import typed_experiment
from neuroplug.loggers.base import Logger, MultiLogger
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.testing.resume_check import same
from neuroplug.training.checkpoint import load_checkpoint
from neuroplug.training.trainer import Trainer

TINY = [
    "logger=none",
    "algo.population_size=8",
    "net.hidden_sizes=[8]",
    "run.eval_episodes=2",
    "run.stop_when_solved=false",
    "run.eval_interval=2",
]


def test_a_member_with_nan_weights_scores_nan_and_the_rest_are_unaffected():
    env = make_spec(EnvConfig(task_id="CartPole-v1"))
    network = build_network(NetConfig(hidden_sizes=[8]), env)
    members = network.initial_params(torch.Generator().manual_seed(0)).repeat(3, 1)
    members[1, 5] = float("nan")
    scheduler = ThreadedScheduler(serial_config(), env)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    result = scheduler.evaluate(
        Population.dense(members),
        Policy(network, env, False),
        backend,
        EvaluationRequest(generation=0),
    )
    assert np.isnan(result.returns[1]).all()
    assert (
        np.isfinite(result.returns[[0, 2]]).all() and result.returns[0, 0] == result.returns[2, 0]
    )


def test_a_simulator_crash_is_retried_and_the_run_ends_as_if_nothing_happened(
    compose, tmp_path, monkeypatch
):
    clean = tmp_path / "clean"
    run_job(compose([*TINY, "run.max_generations=3", f"run.output_dir={clean}"]))
    real = LockstepScheduler.evaluate
    calls = {"count": 0}

    def flaky(self, *args, **kwargs):
        calls["count"] += 1
        if calls["count"] == 2:
            raise RuntimeError("simulated EnvPool crash")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LockstepScheduler, "evaluate", flaky)
    flaky_dir = tmp_path / "flaky"
    run_job(compose([*TINY, "run.max_generations=3", f"run.output_dir={flaky_dir}"]))
    left, right = load_checkpoint(clean), load_checkpoint(flaky_dir)
    for key in ("algorithm", "counters", "last_eval", "normalizer"):
        assert same(left[key], right[key]), key


def test_a_simulator_that_keeps_crashing_stops_the_run_with_its_checkpoint_intact(
    compose, tmp_path, monkeypatch
):
    real = LockstepScheduler.evaluate
    calls = {"count": 0}

    def broken_after_first(self, *args, **kwargs):
        calls["count"] += 1
        if calls["count"] > 1:
            raise RuntimeError("simulated EnvPool crash")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LockstepScheduler, "evaluate", broken_after_first)
    with pytest.raises(
        RuntimeError,
        match=r"evaluating generation 2 failed 3 time\(s\).*checkpoint of generation 1 .* is intact",
    ):
        run_job(
            compose(
                [
                    *TINY,
                    "run.max_generations=3",
                    "run.eval_interval=0",
                    f"run.output_dir={tmp_path}",
                ]
            )
        )
    assert load_checkpoint(tmp_path)["generation"] == 1


class _Exploding(Logger):
    def log(self, metrics):
        raise OSError("W&B is down and the disk is read-only")


def test_a_failing_logger_never_stops_training(compose, tmp_path, capsys):
    config = compose([*TINY, "run.max_generations=2", f"run.output_dir={tmp_path}"])
    summary = Trainer(
        typed_experiment(config), tmp_path, loggers=MultiLogger([_Exploding()])
    ).train()
    assert summary["generation"] == 2 and summary["status"] == "finished"
    assert capsys.readouterr().err.count("logger _Exploding failed") == 1


def test_an_unwritable_metrics_file_never_stops_training(compose, tmp_path, capsys):
    (tmp_path / "metrics.csv").mkdir()  # writing the CSV fails (root ignores read-only modes)
    summary = run_job(
        compose([*TINY, "logger=console", "run.max_generations=2", f"run.output_dir={tmp_path}"])
    )
    assert summary["generation"] == 2
    assert "logger CSVLogger failed" in capsys.readouterr().err


class _Recorder(Logger):
    def __init__(self):
        self.lines, self.metrics = [], []

    def message(self, text):
        self.lines.append(text)

    def log(self, metrics):
        self.metrics.append(metrics)


def test_nan_returns_are_warned_about_counted_and_the_center_stays_finite(
    compose, tmp_path, monkeypatch
):
    real = LockstepScheduler.evaluate

    def poisoned(self, population, *args, **kwargs):
        result = real(self, population, *args, **kwargs)
        if len(population) > 1:
            result.returns[0] = np.nan  # e.g. an env or a plugin producing NaN
        return result

    monkeypatch.setattr(LockstepScheduler, "evaluate", poisoned)
    recorder = _Recorder()
    config = compose([*TINY, "run.max_generations=3", f"run.output_dir={tmp_path}"])
    trainer = Trainer(typed_experiment(config), tmp_path, loggers=MultiLogger([recorder]))
    assert trainer.train()["generation"] == 3
    assert sum("member(s) had NaN/inf returns" in line for line in recorder.lines) == 3
    assert recorder.metrics[-1]["algo/nonfinite_fitness"] == 3
    assert torch.isfinite(trainer.parts.algorithm.policy_params()).all()
