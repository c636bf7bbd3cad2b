"""Learning curves drawn from every run's local record (metrics.csv), without W&B."""

from __future__ import annotations

import sys

import matplotlib.pyplot
import numpy as np
import pytest

from neuroplug.app import run_job
from neuroplug.tools.plot import _band, _mean_seconds, main
from neuroplug.tools.runs import group_runs, load_curves, points


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
        # run.eval_interval=2: the interval's evaluation, and one at the last generation.
        evaluated = np.isfinite(curve.columns["eval_return_mean"])
        assert list(curve.columns["generation"][evaluated]) == [2, 3]


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


def _fake_run(root, name, sigma, seed, generations, eval_every=2, seconds_per_generation=1.0):
    """A run dir as neuroplug writes it: config.yaml and metrics.csv (no training needed)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        "run:\n"
        f"  seed: {seed}\n"
        f"  output_dir: {run_dir}\n"
        "algo:\n  name: es\n"
        f"  sigma: {sigma}\n"
        "env:\n  task_id: CartPole-v1\n"
    )
    lines = ["generation,frames,elapsed,return_mean,eval_return_mean"]
    for generation in range(1, generations + 1):
        evaluation = str(10.0 * generation) if generation % eval_every == 0 else ""
        lines.append(
            f"{generation},{1000 * generation},{seconds_per_generation * generation},"
            f"{sigma * generation + seed},{evaluation}"
        )
    (run_dir / "metrics.csv").write_text("\n".join(lines) + "\n")
    return run_dir


def test_runs_are_grouped_by_every_differing_setting_but_the_seed(tmp_path):
    for sigma in (0.01, 0.02):
        for seed in (0, 1, 2):
            _fake_run(tmp_path, f"s{sigma}_{seed}", sigma, seed, generations=4)
    groups = group_runs(load_curves([tmp_path]))
    assert sorted(groups) == [
        "es on CartPole-v1 algo.sigma=0.01",
        "es on CartPole-v1 algo.sigma=0.02",
    ]
    assert all(len(members) == 3 for members in groups.values())


def test_a_group_is_drawn_to_its_longest_run_and_a_sparse_metric_through_its_rows(tmp_path):
    _fake_run(tmp_path, "short", 0.02, 0, generations=3)
    _fake_run(tmp_path, "long", 0.02, 1, generations=8)
    curves = load_curves([tmp_path])
    grid, mean, low, high = _band(curves, "frames", "return_mean")
    assert grid[-1] == 8000  # the longest run's end, not the shortest's
    assert 3000 in grid  # the short run's own end is drawn exactly
    beyond = grid > 3000
    assert np.isnan(low[beyond]).all() and np.isnan(high[beyond]).all()  # one run: no band
    assert (low[~beyond] <= mean[~beyond]).all() and (mean[~beyond] <= high[~beyond]).all()
    x, y = points(curves[0], "frames", "eval_return_mean")
    assert len(x) >= 1 and np.isfinite(y).all()  # the evaluated rows, joined as a line
    grid, mean, _, _ = _band(curves, "frames", "eval_return_mean")
    assert np.isfinite(mean).all() and grid[-1] == 8000


def test_a_group_band_is_the_95_percent_interval_of_the_mean_over_seeds(tmp_path):
    for seed in range(6):
        _fake_run(tmp_path, f"seed{seed}", 0.02, seed, generations=4)
    curves = load_curves([tmp_path])
    grid, mean, low, high = _band(curves, "frames", "return_mean", reps=500)
    seeds = np.array([np.interp(grid, *points(curve, "frames", "return_mean")) for curve in curves])
    assert np.allclose(mean, seeds.mean(axis=0))
    # Narrower than the seeds' range (the band used to be it), around the mean.
    assert (seeds.min(axis=0) < low).all() and (low < mean).all()
    assert (mean < high).all() and (high < seeds.max(axis=0)).all()


def test_the_wall_time_panel_is_monotone_where_seeds_log_at_different_times(tmp_path):
    for seed, (generations, seconds) in enumerate([(6, 1.0), (8, 3.0), (5, 2.0)]):
        _fake_run(tmp_path, f"seed{seed}", 0.02, seed, generations, seconds_per_generation=seconds)
    curves = load_curves([tmp_path])
    frames, _, _, _ = _band(curves, "frames", "return_mean", reps=0)
    seconds = _mean_seconds(curves, frames)
    assert (np.diff(seconds) > 0).all()
    assert seconds[0] == pytest.approx((1.0 + 3.0 + 2.0) / 3)  # generation 1: 1000 frames
    # At the longest seed's end, the others count the time they took in all.
    assert seconds[-1] == pytest.approx((6 * 1.0 + 8 * 3.0 + 5 * 2.0) / 3)


@pytest.fixture
def drawn(monkeypatch):
    """The figures plot_curves draws, kept open."""
    figures = []
    monkeypatch.setattr(matplotlib.pyplot, "close", figures.append)
    return figures


def test_a_sparse_metric_of_seeds_is_drawn_with_markers_at_its_logged_frames(tmp_path, drawn):
    for seed in range(3):
        _fake_run(tmp_path, f"seed{seed}", 0.02, seed, generations=6, eval_every=3)
    main([str(tmp_path), "--out", str(tmp_path / "eval.png"), "--y", "eval_return_mean"])
    (line,) = drawn[0].axes[0].get_lines()
    assert line.get_marker() == "o"
    assert list(line.get_xdata()) == [3000, 6000]
    assert line.get_label() == "es on CartPole-v1 (mean, 95% CI over 3 seeds)"


def test_without_rliable_a_group_is_drawn_as_its_mean_and_says_so(
    tmp_path, drawn, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "rliable", None)
    for seed in range(2):
        _fake_run(tmp_path, f"seed{seed}", 0.02, seed, generations=3)
    main([str(tmp_path), "--out", str(tmp_path / "curves.png")])
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert "pip install neuroplug[compare]" in capsys.readouterr().err
    (line,) = drawn[0].axes[0].get_lines()
    assert line.get_label() == "es on CartPole-v1 (mean of 2 seeds)"
