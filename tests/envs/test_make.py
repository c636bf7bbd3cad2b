"""Env specs from every shipped env config, episode seeds, and continuous-control runs."""

from __future__ import annotations

import numpy as np
import pytest
from envpool_build import skip_unless_envpool_has

from neuroplug.app import run_job
from neuroplug.config.paths import conf_dir
from neuroplug.config.schema import EnvConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError

SHIPPED_ENVS = sorted(
    path.stem
    for path in (conf_dir() / "env").glob("*.yaml")
    if path.stem not in ("envpool", "gymnasium")  # the two that need the env named
)
EXPECTED_FAMILY = {
    "cartpole": "classic",
    "pendulum": "classic",
    "halfcheetah": "mujoco",
    "hopper": "mujoco",
    "humanoid": "mujoco",
    "breakout": "atari",
    "pong": "atari",
    "frostbite": "atari",
    "seaquest": "atari",
    "cheetah_run": "dm_control",
    "walker_walk": "dm_control",
    "humanoid_run": "dm_control",
}


def test_every_env_the_issue_names_is_shipped():
    assert set(EXPECTED_FAMILY) <= set(SHIPPED_ENVS)


@pytest.mark.parametrize("name", SHIPPED_ENVS)
def test_shipped_env_configs_describe_their_envs(compose, name):
    config = to_dataclass(EnvConfig, compose([f"env={name}"]).env, "env")
    if config.parallel_env:  # a multi-agent world of PettingZoo's API (its own tests)
        pytest.importorskip("pettingzoo")
    elif config.task_id:  # an EnvPool task (text tasks and gymnasium ids are built anyway)
        skip_unless_envpool_has(config.task_id)
    spec = make_spec(config)
    assert spec.family.name == EXPECTED_FAMILY.get(name, spec.family.name)
    if config.parallel_env:
        assert len(spec.agents) >= 1 and spec.family.name == "multi_agent"
    elif spec.family.name == "atari":
        assert spec.obs_shape == (4, 84, 84) and spec.discrete and spec.frame_skip == 4
        assert spec.max_episode_steps == 5000  # 20k frames, the deep GA paper's cap
    elif spec.measurement_layout is not None:  # a row of numbers below the frames
        assert spec.obs_shape == (4, 85, 84) and spec.measurement_layout.frame == (4, 84, 84)
    elif spec.is_image:
        assert spec.obs_shape == (4, 84, 84) and spec.discrete and spec.frame_skip == 4
    elif name == "intersection_ma":  # highway-env's kinematics table: 5 cars x 5 features
        assert spec.obs_shape == (5, 5) and spec.frame_skip == 1 and len(spec.agents) == 2
    else:
        assert len(spec.obs_shape) == 1 and spec.frame_skip == 1


def test_family_is_detected_for_generic_tasks():
    assert make_spec(EnvConfig(task_id="Asterix-v5")).family.name == "atari"
    assert make_spec(EnvConfig(task_id="Walker2d-v4")).family.name == "mujoco"
    assert make_spec(EnvConfig(task_id="Acrobot-v1")).family.name == "classic"
    skip_unless_envpool_has("DefendTheCenter-v1")
    assert make_spec(EnvConfig(task_id="DefendTheCenter-v1")).family.name == "vizdoom"


def test_generic_env_needs_a_task_id(compose):
    with pytest.raises(ConfigError, match="env.task_id: no environment given"):
        to_dataclass(EnvConfig, compose(["env=envpool"]).env, "env")
    with pytest.raises(ConfigError, match=r"env.id \(a gymnasium id\), env.entry_point"):
        to_dataclass(EnvConfig, compose(["env=gymnasium"]).env, "env")
    named = to_dataclass(EnvConfig, compose(["env=gymnasium", "env.id=Acrobot-v1"]).env, "env")
    assert make_spec(named).family.name == "gymnasium"


def test_unknown_task_suggests_close_names():
    with pytest.raises(ConfigError, match="did you mean Pong-v5"):
        make_spec(EnvConfig(task_id="Pong-v4"))


@pytest.mark.parametrize("env", ["pendulum", "hopper"])
def test_continuous_control_runs_with_observation_normalization_and_action_noise(
    compose, env, tmp_path
):
    overrides = [
        f"env={env}",
        "env.max_episode_steps=50",
        "logger=none",
        "algo.population_size=4",
        "run.max_generations=2",
        "run.eval_episodes=1",
        "net.hidden_sizes=[16]",
        f"run.output_dir={tmp_path}",
    ]
    summary = run_job(compose(overrides))
    assert summary["generation"] == 2
    assert summary["env_steps"] <= 2 * 4 * 50
    assert np.isfinite(summary["eval_return_mean"])


def test_a_known_family_registers_only_its_envpool_tasks_and_others_still_resolve():
    """EnvPool's package import registers every family (Jumanji's renderer pulls in
    matplotlib); a classic-control run registers just its own, in a fresh interpreter."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from neuroplug.config.schema import EnvConfig\n"
        "from neuroplug.envs.make import make_spec\n"
        "make_spec(EnvConfig(task_id='CartPole-v1', family='classic'))\n"
        "print('AFTER_CLASSIC', 'matplotlib' in sys.modules, 'envpool.jumanji' in sys.modules)\n"
        "spec = make_spec(EnvConfig(task_id='Breakout-v5', family='classic'))\n"
        "print('THEN', spec.obs_shape)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "AFTER_CLASSIC False False" in done.stdout
    # A task outside the named family is found once every family is registered.
    assert "THEN (4, 84, 84)" in done.stdout


def test_dict_observations_are_flattened_in_the_tasks_own_order():
    import envpool

    skip_unless_envpool_has("WalkerWalk-v1")
    spec = make_spec(EnvConfig(task_id="WalkerWalk-v1"))
    assert spec.family.name == "dm_control"
    assert spec.obs_parts == (("orientations", (14,)), ("height", ()), ("velocity", (9,)))
    assert spec.obs_shape == (24,)
    seeds = np.array([5, 6])
    pool = make_pool(spec, seeds)
    raw = envpool.make("WalkerWalk-v1", env_type="gymnasium", num_envs=2, seed=5, env_seed=[5, 6])
    actions = np.full((2, 6), 0.3)
    for flat, entries in [
        (pool.reset()[0], raw.reset()[0]),
        (pool.step(actions)[0], raw.step(actions)[0]),
    ]:
        expected = np.concatenate(
            [entries["orientations"], entries["height"][:, None], entries["velocity"]], axis=1
        )
        assert flat.shape == (2, 24) and np.array_equal(flat, expected)


def test_a_category_entry_is_one_hot_and_a_small_image_among_vectors_flattened():
    skip_unless_envpool_has("MiniGrid-Empty-5x5-v0")
    spec = make_spec(EnvConfig(task_id="MiniGrid-Empty-5x5-v0"))
    assert spec.obs_parts == (("direction", (4,)), ("image", (7, 7, 3)), ("mission", (96,)))
    assert spec.obs_categorical == ("direction",) and spec.obs_shape == (247,)
    pool = make_pool(spec, np.array([1, 2]))
    try:
        observations = pool.reset()[0]
    finally:
        pool.close()
    assert observations.shape == (2, 247)
    assert (observations[:, :4].sum(1) == 1).all() and set(np.unique(observations[:, :4])) <= {0, 1}


def test_an_observation_that_cannot_be_flattened_honestly_is_refused_naming_the_entry():
    from gymnasium import spaces

    from neuroplug.envs.flatten import observation_parts

    vector = spaces.Box(-1, 1, (3,))
    frames = spaces.Dict({"frame": spaces.Box(0, 255, (84, 84, 3), np.uint8), "speed": vector})
    with pytest.raises(
        ConfigError, match=r"^env\.task_id: Task's observation entry 'frame' is an image"
    ):
        observation_parts("Task", frames)
    nested = spaces.Dict({"inner": spaces.Dict({"speed": vector})})
    with pytest.raises(ConfigError, match=r"entry 'inner' is itself a Dict"):
        observation_parts("Task", nested)


@pytest.mark.parametrize("algo", ["es", "ppo"])
def test_a_dm_control_task_trains(compose, tmp_path, algo):
    skip_unless_envpool_has("CheetahRun-v1")
    sizes = (
        ["algo.population_size=4", "run.max_generations=2"]
        if algo == "es"
        # Two short segments (the MuJoCo preset's are 16,384 steps of 32-way minibatching).
        else [
            "algo.num_envs=2",
            "algo.rollout_length=16",
            "algo.segment_steps=64",
            "run.max_segments=2",
        ]
    )
    summary = run_job(
        compose(
            [
                f"algo={algo}",
                "env=cheetah_run",
                "env.max_episode_steps=50",
                "logger=none",
                "run.eval_episodes=1",
                "net.hidden_sizes=[8]",
                *sizes,
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    unit = "generation" if algo == "es" else "segment"  # a learner counts segments
    assert summary[unit] == 2 and np.isfinite(summary["eval_return_mean"])
