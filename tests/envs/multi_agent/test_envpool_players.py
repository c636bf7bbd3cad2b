"""EnvPool's multi-player tasks: a world's players are consecutive slots with EnvPool's
step contract per world, and a learner's shared policy drives them."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_pool, make_spec

TASK = "IntersectionMultiAgent-v1"


def test_each_player_is_a_slot_of_its_world():
    spec = make_spec(EnvConfig(task_id=TASK))
    assert spec.agents == ("player_0", "player_1") and spec.lanes_per_env == 2
    pool = make_pool(spec, np.arange(6), num_threads=1)  # 3 worlds
    driver = pool.step_batches(None, None)
    driver.reset()
    first = driver.recv()
    assert sorted(first.env_ids.tolist()) == list(range(6))
    assert first.observations.shape == (6, *spec.obs_shape)
    driver.send(np.zeros(6, np.int32), np.arange(6))
    step = driver.recv()
    assert sorted(step.env_ids.tolist()) == list(range(6))
    by_slot = np.argsort(step.env_ids)
    done = step.done[by_slot].reshape(3, 2)
    assert (done[:, 0] == done[:, 1]).all()  # a world's players end together
    with pytest.raises(RuntimeError, match="some players of a world only"):
        driver.send(np.zeros(1, np.int32), np.array([3]))
    pool.close()


def test_a_shared_policy_drives_both_cars(compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=ppo",
                "env=intersection_ma",
                "algo.num_envs=4",
                "run.max_frames=1500",
                "logger=none",
                f"run.output_dir={tmp_path}",
            ]
        )  # fmt: skip
    )
    assert np.isfinite(summary["eval_return_mean"])
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert int(rows[-1]["episodes"]) % 2 == 0  # both players' episodes, ending together


def test_a_policy_per_car_learns_in_one_stacked_update(compose, tmp_path):
    """Two policies of as many lanes each stack their PPO updates; the highway's grid of
    observations (5 cars x 5 features) is flattened for the stacked pass as for one."""
    run = ["algo=ppo", "env=intersection_ma", "env.policy_mapping=per_agent", "algo.num_envs=4"]
    summary = run_job(
        compose([*run, "run.max_frames=1500", "logger=none", f"run.output_dir={tmp_path}"])
    )
    assert np.isfinite(summary["eval_return_mean"])
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert {"eval/player_0/return_mean", "eval/player_1/return_mean"} <= set(rows[-1])
