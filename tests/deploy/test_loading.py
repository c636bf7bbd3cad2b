"""``load_policy`` on real runs: a strategy's, learners' (discrete and continuous) and a QD
archive's elite act as the run's evaluation engine does; sources are found or named."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_policy_module import engine_actions

from neuroplug.app import run_job
from neuroplug.deploy.archive_elites import archive_cell, archive_cells
from neuroplug.deploy.export import example_observations
from neuroplug.deploy.loading import load_policy, read_policy
from neuroplug.training.checkpoint import checkpoint_dir
from neuroplug.training.policy_sources import PolicySourceError

RUNS = {
    "es": ["algo=es", "env=cartpole", "algo.population_size=8", "run.max_generations=2"],
    "ppo": [
        "algo=ppo", "env=cartpole", "algo.num_envs=4", "algo.rollout_length=16",
        "algo.segment_steps=256", "run.max_segments=1",
    ],
    "sac": [
        "algo=sac", "env=pendulum", "algo.learning_starts=64", "algo.batch_size=32",
        "algo.buffer_size=2000", "algo.critic_hidden=[32]", "algo.segment_steps=200",
        "run.max_segments=1",
    ],
}  # fmt: skip


@pytest.mark.parametrize("algorithm", sorted(RUNS))
def test_a_runs_policy_loads_and_acts_as_its_evaluation(compose, tmp_path, algorithm):
    overrides = [*RUNS[algorithm], "net.hidden_sizes=[16]", "run.eval_episodes=1", "logger=none"]
    run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    policy = load_policy(tmp_path)
    observations = example_observations(policy, 9, seed=1)
    expected, _ = engine_actions(tmp_path, observations, None)
    got = policy(observations).numpy()
    if policy.discrete:
        assert np.array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, atol=1e-5)
    record = read_policy(checkpoint_dir(tmp_path))  # the checkpoints folder names it too
    assert record.env["task_id"] == policy.env["task_id"]


def test_an_archive_elite_loads_by_its_cell(compose, tmp_path):
    overrides = ["algo=map_elites", "algo.behavior=descriptors:cart_and_pole", "algo.cells=[6]"]
    overrides += ["algo.bounds=[[-2.5,2.5]]", "algo.population_size=16", "env.max_episode_steps=60"]
    overrides += ["net.hidden_sizes=[8]", "run.max_generations=2", "logger=none"]
    run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    cell = int(archive_cells(tmp_path)["cells"][0])
    policy = load_policy(tmp_path, cell=cell)
    elite = archive_cell(tmp_path, cell)["params"]
    observations = example_observations(policy, 5)
    expected, _ = engine_actions(tmp_path, observations, None, params=elite)
    assert np.array_equal(policy(observations).numpy(), expected)


def test_a_missing_source_is_named(tmp_path):
    with pytest.raises(PolicySourceError, match="does not exist"):
        load_policy(tmp_path / "nowhere")
    with pytest.raises(PolicySourceError, match=r"no policy in .*checkpoints/best_policy\.pt"):
        load_policy(tmp_path)


def test_a_choice_the_file_lacks_is_named(compose, tmp_path):
    from policy_files import KINDS, policy_file

    path = policy_file(compose, tmp_path, KINDS["mlp"])
    with pytest.raises(PolicySourceError, match=r"which: unknown choice 'worst'"):
        load_policy(path, which="worst")
    assert isinstance(load_policy(path, which="best"), torch.nn.Module)
