"""The shipped defaults learn: ES solves CartPole-v1 on a small CPU budget."""

from __future__ import annotations

from neuroplug.app import run_job


def test_es_solves_cartpole_with_the_shipped_defaults(compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=es",
                "env=cartpole",
                "logger=none",
                "run.max_generations=40",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    assert summary["eval_return_mean"] >= 475, summary
