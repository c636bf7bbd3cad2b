"""The ViZDoom family, added as one module (neuroplug/envs/families/vizdoom.py) plus its
configs: its traits reach the spec, its episodes play, and a run trains on it.

The tests that start Doom engines run in a child process (:mod:`child_process`), from a
directory of their own as a fresh clone is: the engines' parallel start-up crashed the
interpreter there (they raced to make ``./_vizdoom/``), which would end the whole suite."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from child_process import run_in_child
from envpool_build import skip_unless_envpool_has

from neuroplug.config.schema import EnvConfig
from neuroplug.envs import envpool_pools
from neuroplug.envs.families import all_families, family_named
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError


@pytest.fixture(autouse=True)
def _needs_vizdoom():
    skip_unless_envpool_has("D1Basic-v1")


def test_doom_tasks_are_frame_skipped_image_stacks_with_discrete_actions():
    spec = make_spec(EnvConfig(task_id="D1Basic-v1"))
    assert spec.family is family_named("vizdoom")
    assert spec.obs_shape == (4, 84, 84) and spec.obs_dtype == np.uint8
    assert spec.discrete and spec.num_actions == 6  # EnvPool's combined buttons
    assert spec.frame_skip == 4 and spec.start_noops == 0 and not spec.reusable_pools
    assert spec.make_kwargs["use_combined_action"] is True
    assert spec.family.default_network(spec.is_image) == "nature_cnn"
    # The family is named once: every other family is asked after it and declines.
    assert [family.name for family in all_families()].count("vizdoom") == 1


def test_the_engines_directory_is_there_before_envpool_starts_a_pools_engines(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    spec = make_spec(EnvConfig(task_id="D1Basic-v1"))
    found = []

    class _RecordingEnvPool:
        @staticmethod
        def make(*args, **kwargs):
            found.append(Path("_vizdoom").is_dir())
            return "pool"

    monkeypatch.setattr(envpool_pools, "_envpool_for", lambda task_id, family: _RecordingEnvPool)
    assert make_pool(spec, np.array([3, 4])) == "pool"
    assert found == [True]


def test_a_working_directory_that_cannot_hold_the_engines_files_is_said_so(tmp_path, monkeypatch):
    (tmp_path / "_vizdoom").write_text("a file where the engines want their directory")
    monkeypatch.chdir(tmp_path)
    spec = make_spec(EnvConfig(task_id="D1Basic-v1"))
    with pytest.raises(ConfigError, match=r"\./_vizdoom/ .* does not let it be made") as raised:
        make_pool(spec, np.array([3, 4]))
    assert raised.value.field == "env"


def test_doom_episodes_end_and_are_scored_by_the_scenario(tmp_path):
    run_in_child(_play_two_capped_games, str(tmp_path))


def _play_two_capped_games(workdir: str) -> None:
    os.chdir(workdir)
    spec = make_spec(EnvConfig(task_id="D1Basic-v1", max_episode_steps=12))
    pool = make_pool(spec, np.array([3, 4]), num_threads=1)
    try:
        pool.reset()
        ended = 0
        for _ in range(13):
            _, reward, terminated, truncated, _ = pool.step(np.zeros(2, dtype=np.int32))
            assert np.isfinite(reward).all()
            ended += int((terminated | truncated).sum())
        assert ended == 2  # both games end by the 12-step cap (or earlier, by a kill)
    finally:
        pool.close()


def test_info_measurements_come_below_the_frames_in_the_pool_and_the_step_driver(tmp_path):
    run_in_child(_measured_frames, str(tmp_path))


def _measured_frames(workdir: str) -> None:
    """``env.measurements``: the pool's frames carry the game's health and ammunition below
    their pixels, as its info reports them, and the learners' step driver (EnvPool's state
    list read directly) gives the same observations."""
    from neuroplug.envs.raw_steps import step_driver

    os.chdir(workdir)
    ranges = {"HEALTH": [0, 200], "AMMO2": [0, 100]}
    spec = make_spec(EnvConfig(task_id="D1Basic-v1", measurements=ranges))
    assert spec.obs_shape == (4, 85, 84) and spec.measurement_layout.count == 2
    # The numbers are channel 0's alone: an off-policy replay keeps such stacks whole
    # rather than rebuilding them from their newest frames.
    assert spec.frame_stack == 1 and make_spec(EnvConfig(task_id="D1Basic-v1")).frame_stack == 4
    layout = spec.measurement_layout
    pool = make_pool(spec, np.array([3, 4]), num_threads=1)
    driver = step_driver(make_pool(spec, np.array([3, 4]), num_threads=1), spec)
    try:
        pool.async_reset()
        driver.reset()
        for step in range(4):
            observations, _, _, _, info = pool.recv()
            batch = driver.recv()
            assert observations.shape == (2, 4, 85, 84)
            assert np.array_equal(batch.observations, observations)
            for row in range(2):
                _, read = layout.unpack(observations[row])
                told = np.array([info["HEALTH"][row], info["AMMO2"][row]]).clip(0, [200, 100])
                assert np.all(np.abs(read - told) <= np.array([200, 100]) / 255 / 2 + 1e-9)
            actions = np.full(2, step % 3, np.int32)
            pool.send(actions, info["env_id"])
            driver.send(actions, batch.env_ids)
    finally:
        pool.close()
        driver.close()


def test_a_learner_trains_on_the_numbers_and_its_policy_reads_them_from_info(tmp_path):
    run_in_child(_learn_measured, str(tmp_path))


def _learn_measured(output_dir: str) -> None:
    """A learner's network joins ``env.measurements`` to its features; the policy loaded
    outside neuroplug takes the frames and the info entries, one or a batch, as it takes
    the packed frames."""
    import torch

    from neuroplug.app import run_job
    from neuroplug.deploy.loading import load_policy
    from neuroplug.testing import compose

    os.chdir(output_dir)
    overrides = [
        "algo=ppo", "env=doom_basic", "env.measurements={HEALTH:[0,200],AMMO2:[0,100]}",
        "algo.num_envs=2", "algo.env_groups=1", "algo.segment_steps=64", "algo.rollout_length=32",
        "run.max_frames=256", "run.eval_episodes=1", "env.max_episode_steps=16",
        "logger=none", f"run.output_dir={output_dir}",
    ]  # fmt: skip
    run_job(compose(overrides))
    policy = load_policy(output_dir)
    assert policy.obs_shape == (4, 85, 84)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (3, 4, 84, 84), dtype=np.uint8)
    health, ammo = np.array([100.0, 20.0, 180.0]), np.array([50.0, 0.0, 100.0])
    packed = policy.measurement_layout.with_rows(frames, np.stack([health, ammo], 1))
    expected = policy(torch.as_tensor(packed))
    given = policy({"obs": frames, "HEALTH": health, "AMMO2": ammo})
    assert torch.equal(given, expected)
    one = policy({"obs": frames[1], "HEALTH": health[1], "AMMO2": ammo[1]})
    assert one.shape == () and one == expected[1]


def test_evolution_trains_on_doom_through_the_shipped_config(tmp_path):
    run_in_child(_train_one_generation, str(tmp_path))


def _train_one_generation(output_dir: str) -> None:
    os.chdir(output_dir)
    from neuroplug.app import run_job
    from neuroplug.testing import compose
    from neuroplug.training.checkpoint import load_checkpoint

    overrides = [
        "algo=es",
        "env=doom_basic",
        "env.max_episode_steps=8",
        "algo.population_size=2",
        "logger=none",
        "run.max_generations=1",
        "run.eval_episodes=1",
        f"run.output_dir={output_dir}",
    ]
    run_job(compose(overrides))
    state = load_checkpoint(output_dir)
    assert state["generation"] == 1
    assert state["counters"]["frames"] == 4 * state["counters"]["env_steps"]


def test_learners_take_sample_factorys_doom_settings_and_others_the_pixels_ones():
    from neuroplug_learners.appo_config import APPOConfig
    from neuroplug_learners.dqn_config import DQNConfig
    from neuroplug_learners.ppo_config import PPOConfig

    from neuroplug.plugin_configs.presets import resolve

    env = make_spec(EnvConfig(task_id="D1Basic-v1"))
    for config_class in (PPOConfig, APPOConfig):
        settings, source = resolve(config_class(name="ppo"), env)
        assert source == "doom preset: Sample Factory sf_examples/vizdoom"
        assert (settings.rollout_length, settings.epochs, settings.learning_rate) == (32, 1, 1e-4)
        assert settings.num_envs * settings.rollout_length == 1024  # its batch size
    _, source = resolve(DQNConfig(name="dqn"), env)  # no Doom entry: by observation kind
    assert source.startswith("pixels preset")
