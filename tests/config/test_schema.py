"""The run's budgets: the one a user gives is the one that ends the run."""

from __future__ import annotations

from neuroplug.config.schema import DEFAULT_UNITS, RunConfig


def test_with_no_budget_a_run_takes_the_default_generations():
    assert RunConfig().unit_budget == DEFAULT_UNITS == 100


def test_a_frame_budget_alone_is_not_cut_by_a_generation_default():
    assert RunConfig(max_frames=10_000_000).unit_budget is None


def test_both_budgets_given_both_count():
    run = RunConfig(max_generations=5, max_frames=10_000_000)
    assert (run.unit_budget, run.max_frames) == (5, 10_000_000)
