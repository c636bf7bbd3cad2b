"""Statistics over seeds (python -m neuroplug.tools.compare): groups, frames, intervals,
probability of improvement and the files anyone can recompute them from."""

from __future__ import annotations

import json
import sys
from itertools import product

import numpy as np
import pytest

from neuroplug.app import run_job
from neuroplug.tools import intervals
from neuroplug.tools.compare import main
from neuroplug.tools.runs import load_curves, points

REPS = "200"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, compose):
    """Two algorithms x three seeds on CartPole, each a few generations: a frame budget,
    so that every run's frames overlap every other's."""
    root = tmp_path_factory.mktemp("sweep")
    for algo, seed in product(("es", "rs"), (0, 1, 2)):
        run_job(
            compose(
                [
                    f"algo={algo}",
                    "logger=none",
                    "algo.population_size=8",
                    "run.max_frames=2000",
                    "run.stop_when_solved=false",
                    "run.eval_episodes=1",
                    "run.eval_interval=2",
                    "net.hidden_sizes=[8]",
                    f"run.seed={seed}",
                    f"run.output_dir={root / f'{algo}_{seed}'}",
                ]
            )
        )
    return root


@pytest.fixture(scope="module")
def compared(sweep):
    """What compare writes for the sweep (default grouping and metric), read back."""
    out = sweep / "compare"
    main([str(sweep), "--reps", REPS])
    return {
        "out": out,
        "scores": json.loads((out / "scores.json").read_text()),
        "runs": json.loads((out / "runs.json").read_text()),
    }


def test_runs_are_grouped_by_algorithm(compared):
    scores = compared["scores"]
    assert scores["metric"] == "eval_return_mean"  # every run logged it
    assert scores["by"] == ["algo.name"] and not scores["normalised"]
    assert list(scores["groups"]) == ["es", "rs"]
    for group in scores["groups"].values():
        assert group["runs"] == 3 and group["seeds"] == {"CartPole-v1": [0, 1, 2]}
    assert scores["notes"] == []
    assert len(compared["runs"]) == 6


def test_runs_are_aligned_on_frames_every_run_reached(compared):
    span = compared["scores"]["tasks"]["CartPole-v1"]
    logged = [
        points(curve, "frames", "eval_return_mean")
        for curve in load_curves([compared["out"].parent])
    ]
    assert span["first_frame"] == max(x[0] for x, _ in logged)
    assert span["last_frame"] == min(x[-1] for x, _ in logged)  # the shortest run's end
    frames = np.linspace(span["first_frame"], span["last_frame"], 100)
    for run in compared["runs"]:
        (curve,) = load_curves([run["dir"]])
        values = np.interp(frames, *points(curve, "frames", "eval_return_mean"))
        assert run["final"] == pytest.approx(values[-1])
        assert run["auc"] == pytest.approx(values.mean())


def test_each_estimate_lies_in_its_interval(compared):
    for name, group in compared["scores"]["groups"].items():
        runs = [run for run in compared["runs"] if run["group"] == name]
        for kind, statistic in product(("final", "auc"), ("iqm", "mean")):
            estimate = group[kind][statistic]
            assert estimate["low"] <= estimate["value"] <= estimate["high"]
            assert min(run[kind] for run in runs) <= estimate["low"]
            assert estimate["high"] <= max(run[kind] for run in runs)
        assert group["final"]["mean"]["value"] == pytest.approx(
            np.mean([run["final"] for run in runs])
        )


def test_the_probability_of_improvement_is_recomputed_from_the_runs(compared):
    improvement = {(pair["x"], pair["y"]): pair for pair in compared["scores"]["improvement"]}
    assert set(improvement) == {("es", "rs"), ("rs", "es")}
    for pair in improvement.values():
        assert 0 <= pair["low"] <= pair["probability"] <= pair["high"] <= 1
    forward, backward = improvement["es", "rs"], improvement["rs", "es"]
    assert forward["probability"] + backward["probability"] == pytest.approx(1)
    final = {
        group: np.array([run["final"] for run in compared["runs"] if run["group"] == group])
        for group in ("es", "rs")
    }
    wins = (final["es"][:, None] > final["rs"][None, :]).mean()
    ties = (final["es"][:, None] == final["rs"][None, :]).mean()
    assert forward["probability"] == pytest.approx(wins + ties / 2)


def test_the_figures_and_the_page_are_written(compared):
    for name in ("curves.png", "profile.png"):
        image = (compared["out"] / name).read_bytes()
        assert image[:8] == b"\x89PNG\r\n\x1a\n" and len(image) > 10_000
    page = (compared["out"] / "scores.md").read_text()
    assert page.startswith("# eval_return_mean by algo.name on CartPole-v1")
    assert "| es | 3 |" in page and "| rs | 3 |" in page and "| es | rs |" in page


def _fake_run(root, name, seed, task="CartPole-v1", sigma=0.02, algo="es", returns=None):
    """A run dir as neuroplug writes it (config.yaml, metrics.csv), without training:
    ``returns`` at frames 1000, 2000, ... (default: rising with sigma and seed)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        f"run:\n  seed: {seed}\nalgo:\n  name: {algo}\n  sigma: {sigma}\nenv:\n  task_id: {task}\n"
    )
    returns = returns if returns is not None else [sigma * k + seed for k in range(1, 5)]
    rows = [f"{k},{1000 * k},{value}" for k, value in enumerate(returns, start=1)]
    (run_dir / "metrics.csv").write_text("\n".join(["generation,frames,return_mean", *rows]))
    return run_dir


def _compare(root, *options):
    main([str(root), "--reps", REPS, *options])
    return json.loads((root / "compare" / "scores.json").read_text())


def test_by_a_swept_setting(tmp_path):
    for sigma, seed in product((0.01, 0.1, 0.05), (0, 1)):
        _fake_run(tmp_path, f"s{sigma}_{seed}", seed, sigma=sigma)
    pooled = _compare(tmp_path)
    assert list(pooled["groups"]) == ["es"]
    assert pooled["notes"] == ["es: pools runs that differ in algo.sigma (see --by)"]
    scores = _compare(tmp_path, "--by", "algo.sigma")
    assert list(scores["groups"]) == ["algo.sigma=0.01", "algo.sigma=0.05", "algo.sigma=0.1"]
    assert scores["notes"] == []


def test_several_tasks_are_normalised_and_have_as_many_runs_each(tmp_path):
    for algo, seed in product(("es", "ga"), (0, 1, 2)):
        _fake_run(tmp_path, f"{algo}_cart_{seed}", seed, algo=algo)
        if seed < 2 or algo == "ga":  # es has one seed fewer on Pong
            scale = 100 if algo == "ga" else 10
            _fake_run(
                tmp_path,
                f"{algo}_pong_{seed}",
                seed,
                "Pong-v5",
                algo=algo,
                returns=[scale * k + seed for k in range(4)],
            )
    scores = _compare(tmp_path)
    assert scores["normalised"] and sorted(scores["tasks"]) == ["CartPole-v1", "Pong-v5"]
    assert scores["groups"]["es"]["seeds"] == {"CartPole-v1": [0, 1], "Pong-v5": [0, 1]}
    assert scores["groups"]["ga"]["runs"] == 3
    assert any("kept" in note and "[0, 1]" in note for note in scores["notes"])
    assert any("min-max normalised per task" in note for note in scores["notes"])
    for group in scores["groups"].values():
        for kind, statistic in product(("final", "auc"), ("iqm", "mean")):
            estimate = group[kind][statistic]
            assert 0 <= estimate["low"] <= estimate["value"] <= estimate["high"] <= 1
    assert "normalised per task" in (tmp_path / "compare" / "scores.md").read_text()


def _one_run_per_group(root):
    _fake_run(root, "only", 0)


def _two_seeds(root):
    for seed in (0, 1):
        _fake_run(root, f"seed{seed}", seed)


def _disjoint_frames(root):
    _fake_run(root, "early", 0, returns=[1.0, 2.0])
    late = _fake_run(root, "late", 1)
    (late / "metrics.csv").write_text("generation,frames,return_mean\n1,5000,1\n2,6000,2\n")


@pytest.mark.parametrize(
    ("make", "options", "message"),
    [
        (lambda root: None, [], "no metrics.csv below the given directories"),
        (
            _two_seeds,
            ["--y", "nope"],
            "no run below the given directories logged 'nope' (--y); "
            "they logged: frames, generation, return_mean",
        ),
        (
            _two_seeds,
            ["--by", "algo.sigm"],
            "no run has the setting 'algo.sigm' (--by); close keys: algo.sigma",
        ),
        (
            _one_run_per_group,
            [],
            "group 'es' has 1 run on CartPole-v1: a 95% CI needs >= 2 runs per group",
        ),
        (
            _disjoint_frames,
            [],
            "the runs on CartPole-v1 logged return_mean at frames that do not overlap",
        ),
    ],
)
def test_bad_input_is_one_line_naming_what_was_wrong(tmp_path, make, options, message):
    make(tmp_path)
    with pytest.raises(SystemExit) as error:
        main([str(tmp_path), "--reps", REPS, *options])
    assert str(error.value.code).startswith(message) and "\n" not in str(error.value.code)


def test_without_rliable_it_says_what_to_install(tmp_path, monkeypatch):
    _two_seeds(tmp_path)
    monkeypatch.setitem(sys.modules, "rliable", None)
    with pytest.raises(SystemExit, match=r"pip install neuroplug\[compare\]"):
        main([str(tmp_path)])


def test_the_written_out_statistics_are_rliable_s(tmp_path):
    from rliable import library, metrics

    scores = np.random.default_rng(0).normal(size=(7, 3, 5))
    iqm_per_point = [metrics.aggregate_iqm(scores[..., point]) for point in range(5)]
    assert np.allclose(intervals.iqm(scores), iqm_per_point)
    per_point = [metrics.aggregate_mean(scores[..., point]) for point in range(5)]
    assert np.allclose(intervals.mean(scores), per_point)
    thresholds = np.linspace(-2, 2, 9)
    expected = library.score_distributions(scores[..., 0], thresholds)
    assert np.allclose(intervals._score_distribution(scores[..., 0], thresholds), expected)
