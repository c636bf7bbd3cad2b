"""Learning curves drawn from every run's local record (metrics.csv), without W&B."""

from __future__ import annotations

import pytest

from neuroplug.app import run_job
from neuroplug.plot import load_curves, main


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, compose):
    root = tmp_path_factory.mktemp("sweep")
    for seed in (0, 1):
        run_job(
            compose(
                [
                    "logger=none",  # the record is written whatever the loggers
                    "algo.population_size=8",
                    "run.max_generations=3",
                    "run.eval_episodes=1",
                    "run.eval_interval=2",
                    "net.hidden_sizes=[8]",
                    f"run.seed={seed}",
                    f"run.output_dir={root / f'seed{seed}'}",
                ]
            )
        )
    return root


def test_curves_are_read_from_every_run(sweep):
    curves = load_curves([sweep])
    assert len(curves) == 2
    assert {curve.label for curve in curves} == {"es on CartPole-v1"}
    for curve in curves:
        assert list(curve.columns["generation"]) == [1, 2, 3]
        assert (curve.columns["frames"][1:] > curve.columns["frames"][:-1]).all()


@pytest.mark.parametrize("metric", ["return_mean", "eval_return_mean"])
def test_plot_writes_a_png(sweep, tmp_path, metric, capsys):
    output = tmp_path / f"{metric}.png"
    main([str(sweep), "--out", str(output), "--y", metric])
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(output) in capsys.readouterr().out


def test_a_metric_nobody_logged_is_a_clear_error(sweep, tmp_path):
    with pytest.raises(SystemExit, match="no run below the given directories logged 'nope'"):
        main([str(sweep), "--out", str(tmp_path / "x.png"), "--y", "nope"])


def test_a_dir_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no metrics.csv below the given directories"):
        main([str(tmp_path)])
