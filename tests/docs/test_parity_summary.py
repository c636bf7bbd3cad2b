"""The parity summary's statistics on records the test writes: the deployed policy's final
evaluation is reported beside the training score where every run kept one."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("rliable")
ROOT = Path(__file__).resolve().parents[2]


def _summary():
    sys.path.insert(0, str(ROOT / "benchmarks" / "parity"))
    try:
        return importlib.import_module("summary")
    finally:
        sys.path.remove(str(ROOT / "benchmarks" / "parity"))


def _record(seed: int, level: float, deployed: float | None) -> dict:
    record = {
        "seed": seed, "budget": 20_000, "bin": 10_000, "unit": "env_steps",
        "points": [[10_000, level - 100, 5, 10.0], [20_000, level + seed, 5, 20.0]],
        "steps_per_second": 100.0, "wall_seconds": 20.0,
    }  # fmt: skip
    if deployed is not None:
        record["final_evaluation"] = deployed + seed
    return record


def test_the_deployed_policys_evaluation_is_reported_where_every_run_kept_one(tmp_path):
    summary = _summary()
    comparison = next(c for c in summary.COMPARISONS if c.key == "erl/Pendulum-v1")
    sides = {
        "neuroplug": [_record(seed, -1_300, -300) for seed in (1, 2, 3)],
        "td3": [_record(seed, -650, -600) for seed in (1, 2, 3)],
    }
    row = summary.compare(comparison, sides, tmp_path)
    assert row["versus"]["td3"]["verdict"] == "gap"  # by the training episodes' score
    ours, theirs = row["deployed"]["neuroplug"], row["deployed"]["td3"]
    assert ours[0] == pytest.approx(-298) and theirs[0] == pytest.approx(-598)
    (line,) = [text for text in summary.also_lines([row]) if "deployed" in text]
    assert "neuroplug -298" in line and "td3 -598" in line

    sides["td3"][0].pop("final_evaluation")  # a run without one: no deployed line
    assert "deployed" not in summary.compare(comparison, sides, tmp_path)


def test_a_sitting_alone_replaces_the_suites_speeds_in_the_table(tmp_path):
    summary = _summary()
    comparison = next(c for c in summary.COMPARISONS if c.key == "erl/Pendulum-v1")
    sides = {
        "neuroplug": [_record(seed, -1_300, None) for seed in (1, 2, 3)],
        "td3": [_record(seed, -650, None) for seed in (1, 2, 3)],
    }
    row = summary.compare(comparison, sides, tmp_path)
    assert row["alone"] is None and "| 100 / 100 |" in summary.table([row])

    runs = {"neuroplug": [{"steps_per_second": s} for s in (150.0, 170.0, 400.0)],
            "td3": [{"steps_per_second": s} for s in (90.0, 110.0)]}  # fmt: skip
    sitting = {"steps": 30_000, "runs": runs}
    (tmp_path / "speed_one_thread_2026-12-07.json").write_text(summary.json.dumps(sitting))
    index = {"one_thread": "speed_one_thread_2026-12-07.json"}
    (tmp_path / "speed_alone.json").write_text(summary.json.dumps(index))
    row = summary.compare(comparison, sides, tmp_path)
    assert row["alone"]["steps_per_second"] == {"neuroplug": 170.0, "td3": 100.0}  # medians
    assert "| 170† / 100† |" in summary.table([row])
    (line,) = [text for text in summary.also_lines([row]) if "speed alone" in text]
    assert "30,000 env steps a run" in line and "speed_one_thread_2026-12-07.md" in line
