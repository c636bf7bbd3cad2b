"""APPO: it solves CartPole while sampling and learning overlap, and its lag is bounded."""

from __future__ import annotations

import csv

import pytest
from neuroplug_learners.appo import APPOConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import resolved_settings

CARTPOLE = [
    "algo=appo",
    "env=cartpole",
    "net.hidden_sizes=[64,64]",
    "algo.rollout_length=32",
    "algo.epochs=8",
    "algo.minibatches=2",
    "algo.gamma=0.98",
    "algo.gae_lambda=0.8",
    "algo.learning_rate=1e-3",
    "algo.clip_coef=0.2",
    "algo.entropy_coef=0.0",
    "algo.env_groups=1",
    "algo.torch_threads=1",
]


def test_rollouts_older_than_the_lag_bound_are_dropped_and_the_rest_learned(compose, tmp_path):
    run_job(
        compose(
            [
                *CARTPOLE,
                "algo.max_policy_lag=8",
                "algo.queue_size=4",
                "logger=console",
                "algo.segment_steps=2048",
                "run.max_segments=2",
                "run.eval_episodes=1",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert len(rows) == 2
    for row in rows:
        assert float(row["algo/rollouts_learned"]) >= 1
        assert float(row["algo/policy_lag_learned_max"]) <= 8
        # A full queue makes the sampler wait (the default), so no rollout is lost to it:
        # each of the segment's 2048 / (8 x 32) rollouts is learned or dropped for its lag.
        assert float(row["algo/rollouts_dropped_full"]) == 0
        assert float(row["algo/rollouts_learned"]) + float(row["algo/rollouts_dropped_lag"]) == 8
    # The learner ran behind the sampler: some rollouts arrived staler than the bound.
    assert max(float(row["algo/policy_lag_max"]) for row in rows) > 8
    assert sum(float(row["algo/rollouts_dropped_lag"]) for row in rows) >= 1


@pytest.mark.parametrize(
    ("field", "value"), [("max_policy_lag", -1), ("vtrace_rho", 0.0), ("queue_size", 0)]
)
def test_bad_appo_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"algo.{field}"):
        resolved_settings(APPOConfig(name="appo", **{field: value}))


def test_a_recurrent_appo_trains_and_its_policy_replays_with_its_core(compose, tmp_path):
    from neuroplug.tools.watch import watch

    masked = [*CARTPOLE, "env.observation_mask=[1,3]", "net.core=gru", "algo.recurrence=8"]
    tiny = [*masked, "algo.segment_steps=512", "run.max_frames=2048", "run.eval_episodes=3"]
    summary = run_job(compose([*tiny, "logger=none", f"run.output_dir={tmp_path}"]))
    assert summary["frames"] >= 2048
    replayed = watch(tmp_path, video=False)
    assert replayed.returns.mean() == pytest.approx(summary["eval_return_mean"])
