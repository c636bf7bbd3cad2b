"""env=gymnasium: a user's own env (defined only here, in tests/support/corridor_env.py) and
registered gymnasium ids, stepped with EnvPool's rules and trained by every family."""

from __future__ import annotations

import csv
from dataclasses import replace

import gymnasium
import numpy as np
import pytest
from corridor_env import Corridor

from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError

CORRIDOR = EnvConfig(entry_point="corridor_env:Corridor", max_episode_steps=30)


def _results(pool, count: int) -> dict[int, tuple]:
    observations, rewards, terminated, truncated, info = pool.recv()
    assert len(info["env_id"]) == count
    return {
        int(env): (observations[row].copy(), float(rewards[row]), bool(terminated[row]))
        for row, env in enumerate(info["env_id"])
    }


@pytest.mark.parametrize("workers", [0, 2])
def test_the_pool_steps_gymnasium_envs_by_envpools_rules(workers):
    spec = replace(make_spec(CORRIDOR), workers=workers, vectorization="processes")
    pool = make_pool(spec, np.array([11, 12, 13]))
    try:
        everyone = np.arange(3, dtype=np.int32)
        # A fresh env resets on its first send: its first observation, reward 0.
        pool.send(np.zeros(3, np.int64), everyone)
        first = _results(pool, 3)
        for env, seed in enumerate((11, 12, 13)):
            expected, _ = Corridor().reset(seed=seed)
            np.testing.assert_array_equal(first[env][0], expected)
            assert first[env][1:] == (0.0, False)
        # Only the envs sent step: env 1 walks right until the end, the others wait.
        steps = 0
        while True:
            pool.send(np.ones(1, np.int64), np.array([1], np.int32))
            ((env, (observation, reward, ended)),) = _results(pool, 1).items()
            steps += 1
            if ended:
                break
        assert env == 1 and reward == pytest.approx(0.99) and observation[0] == 1.0
        assert steps == 7 - int(round(first[1][0][0] * 7))
        # An ended env resets on its next send (the action is ignored), continuing its RNG.
        pool.send(np.ones(3, np.int64), everyone)
        after = _results(pool, 3)
        assert after[1][1:] == (0.0, False)
        for env in (0, 2):  # one step right from where they were
            assert after[env][0][0] == pytest.approx(first[env][0][0] + 1 / 7)
    finally:
        pool.close()


def test_results_do_not_depend_on_where_the_envs_step():
    spec = make_spec(EnvConfig(id="CartPole-v1"))
    runs = []
    for workers in (0, 1, 3):
        pool = make_pool(
            replace(spec, workers=workers, vectorization="processes"), np.arange(5) + 100
        )
        rng = np.random.default_rng(0)
        try:
            pool.async_reset()
            trace = [sorted(_results(pool, 5).items())]
            for _ in range(40):
                alive = np.flatnonzero(rng.random(5) < 0.7).astype(np.int32)
                pool.send(rng.integers(0, 2, len(alive)), alive)
                trace.append(sorted(_results(pool, len(alive)).items()))
        finally:
            pool.close()
        runs.append(trace)
    for trace in runs[1:]:
        for ours, theirs in zip(runs[0], trace, strict=True):
            assert [env for env, _ in ours] == [env for env, _ in theirs]
            for (_, a), (_, b) in zip(ours, theirs, strict=True):
                np.testing.assert_array_equal(a[0], b[0])
                assert a[1:] == b[1:]


def _metrics(run_dir) -> list[dict]:
    timing = ("second", "time_", "frames_per", "elapsed", "torch_threads")
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    return [{k: v for k, v in row.items() if not any(t in k for t in timing)} for row in rows]


BUDGETS = {
    "es": ["algo=es", "algo.population_size=8", "run.max_generations=3"],
    "ga": ["algo=ga", "algo.population_size=8", "algo.truncation=2", "run.max_generations=2"],
    "ppo": ["algo=ppo", "run.max_frames=1500"],
}


@pytest.mark.parametrize("algo", sorted(BUDGETS))
def test_a_custom_env_trains_by_entry_point_and_the_same_seed_repeats(algo, compose, tmp_path):
    overrides = [
        *BUDGETS[algo],
        "env=gymnasium",
        "env.entry_point=corridor_env:Corridor",
        "env.max_episode_steps=30",
        "net.hidden_sizes=[8]",
        "logger=console",
        "run.eval_episodes=3",
    ]
    summaries, metrics = [], []
    for index, vectorization in enumerate(("in_process", "processes")):
        run_dir = tmp_path / str(index)
        extra = [f"env.vectorization={vectorization}", "env.workers=2", f"run.output_dir={run_dir}"]
        summaries.append(run_job(compose([*overrides, *extra])))
        metrics.append(_metrics(run_dir))
        assert (run_dir / "checkpoints" / "latest.pt").exists()
    assert summaries[0]["frames"] > 0 and len(metrics[0]) >= 2
    # The same seed, in this process or in worker processes: the same run.
    assert metrics[0] == metrics[1]
    assert summaries[0]["eval_return_mean"] == summaries[1]["eval_return_mean"]


@pytest.mark.parametrize(
    "naming",
    [
        ["env.id=registering_env:RegisteredCorridor-v0"],  # gymnasium.make's module:Id form
        ["env.id=RegisteredCorridor-v0", "env.imports=[registering_env]"],
    ],
)
def test_an_env_that_registers_on_import_is_named_by_its_module(naming, compose, tmp_path):
    summary = run_job(
        compose(
            [
                "algo=es",
                "algo.population_size=4",
                "run.max_generations=1",
                "env=gymnasium",
                *naming,
                # Worker processes import the module themselves: their registry starts empty.
                "env.vectorization=processes",
                "env.workers=2",
                "net.hidden_sizes=[8]",
                "logger=none",
                "run.eval_episodes=2",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    assert summary["frames"] > 0 and np.isfinite(summary["eval_return_mean"])


def test_minigrid_trains_with_ppo_through_a_wrapper_named_on_the_command_line(tmp_path):
    """MiniGrid (pip install minigrid) as a new user runs it: registered on import, its dict
    observation made an image by a wrapper, the 7x7 view read by an MLP: PPO reaches the
    goal of the 5x5 room (0.955, the optimum, in about 30k frames)."""
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=ppo",
        "env=gymnasium",
        "env.id=minigrid:MiniGrid-Empty-5x5-v0",
        "env.wrappers=[minigrid.wrappers:ImgObsWrapper]",
        "run.max_frames=24000",
        "algo.segment_steps=2048",
        "run.eval_interval=0",
        "run.eval_episodes=4",
        "logger=console",
        f"run.output_dir={tmp_path}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MLP 147-256-256-7 on the flattened 3x7x7 observation" in done.stdout
    evaluation = float(done.stdout.split("policy evaluation mean return ")[1].split()[0])
    assert evaluation > 0.9, done.stdout


def test_wrappers_apply_in_order_with_their_kwargs_and_shape_what_is_checked():
    # TimeAwareObservation appends the step count: the wrapped env observes 3 numbers.
    timed = {"entry_point": "gymnasium.wrappers:TimeAwareObservation", "kwargs": {"flatten": True}}
    spec = make_spec(replace(CORRIDOR, wrappers=[timed]))
    assert spec.obs_shape == (3,)
    assert spec.maker.wrappers == (
        ("gymnasium.wrappers:TimeAwareObservation", (("flatten", True),)),
    )
    pool = make_pool(spec, np.arange(2))
    try:
        pool.async_reset()
        assert pool.recv()[0].shape == (2, 3)
    finally:
        pool.close()
    with pytest.raises(ConfigError, match="env.wrappers") as raised:
        make_spec(replace(CORRIDOR, wrappers=[{**timed, "kwargs": {"no_such_kwarg": 1}}]))
    assert raised.value.field == "env.wrappers"


def test_observation_spaces_become_what_networks_read():
    class Shapes(gymnasium.Env):
        def __init__(self, kind: str = "dict") -> None:
            spaces = gymnasium.spaces
            self.observation_space = {
                "dict": spaces.Dict(
                    {
                        "b": spaces.Box(-1, 1, (2, 2)),
                        "a": spaces.Box(-1, 1, (3,)),
                        "c": spaces.Discrete(3),
                    }
                ),
                "discrete": spaces.Discrete(5),
                "image": spaces.Box(0, 255, (12, 10, 3), np.uint8),
                "matrix": spaces.Box(-1, 1, (2, 3)),
                "measured": spaces.Dict(
                    {
                        "screen": spaces.Box(0, 255, (40, 36, 1), np.uint8),
                        "health": spaces.Box(0, 100, (2,)),
                    }
                ),
            }[kind]
            self.action_space = spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return self.observation_space.sample(), {}

        def step(self, action):
            return self.observation_space.sample(), 0.0, False, False, {}

    import sys
    import types

    module = types.ModuleType("shapes_env")
    module.Shapes = Shapes
    sys.modules["shapes_env"] = module
    try:
        expected = {
            "dict": (10,), "discrete": (5,), "image": (3, 12, 10), "matrix": (6,),
            "measured": (1, 41, 36),  # the health's 2 numbers in a row below the screen
        }  # fmt: skip
        for kind, shape in expected.items():
            config = EnvConfig(
                entry_point="shapes_env:Shapes", kwargs={"kind": kind}, max_episode_steps=5
            )
            spec = make_spec(config)
            assert spec.obs_shape == shape, kind
            pool = make_pool(spec, np.arange(2))
            try:
                pool.async_reset()
                observations = pool.recv()[0]
            finally:
                pool.close()
            assert observations.shape == (2, *shape), kind
            if kind == "discrete":
                assert (observations.sum(1) == 1).all()
            if kind == "dict":  # the Discrete entry, last in key order, one-hot
                assert spec.obs_categorical == ("c",)
                assert set(np.unique(observations[:, 7:])) <= {0.0, 1.0}
                assert (observations[:, 7:].sum(1) == 1).all()
            if kind == "measured":
                assert spec.measurements == 2 and observations.dtype == np.uint8
                assert not observations[:, 0, 40, 2:].any()  # past the numbers: zeros
        assert make_spec(replace(config, kwargs={"kind": "image"})).obs_dtype == np.uint8
    finally:
        del sys.modules["shapes_env"]


def test_a_custom_env_renders_for_videos():
    from neuroplug.tools.video import frames_of, open_pool

    pool, source, problem = open_pool(make_spec(CORRIDOR), np.arange(2))
    try:
        assert (source, problem) == ("render", None)
        pool.async_reset()
        observations = pool.recv()[0]
        frames = frames_of(pool, source, np.arange(2), observations)
        assert [frame.shape for frame in frames] == [(8, 64, 3)] * 2
    finally:
        pool.close()


# ----------------------------------------------------------------- bad input


class _Unbounded(Corridor):
    def __init__(self) -> None:
        super().__init__()
        self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,))


class _MultiDiscrete(Corridor):
    def __init__(self) -> None:
        super().__init__()
        self.action_space = gymnasium.spaces.MultiDiscrete([2, 3])


class _TupleWrapper(gymnasium.ObservationWrapper):
    def __init__(self, env) -> None:
        super().__init__(env)
        self.observation_space = gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2),))

    def observation(self, observation):
        return (0,)


class _TupleObservations(Corridor):
    def __init__(self) -> None:
        super().__init__()
        self.observation_space = gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(2),))


@pytest.mark.parametrize(
    ("config", "field", "says"),
    [
        (EnvConfig(id="CartPol-v1"), "env.id", "CartPole"),
        (EnvConfig(entry_point="no_such_package.envs:MyEnv"), "env.entry_point", "no_such_package"),
        (EnvConfig(entry_point="corridor_env:Nothing"), "env.entry_point", "has no 'Nothing'"),
        (EnvConfig(entry_point="corridor_env.Corridor"), "env.entry_point", "colon"),
        (EnvConfig(entry_point="corridor_env:Corridor"), "env.max_episode_steps", "no episode cap"),
        (replace(CORRIDOR, kwargs={"width": 3}), "env.kwargs.width", "length"),
        (
            EnvConfig(id="CartPole-v1", kwargs={"max_episode_steps": 3}),
            "env.kwargs.max_episode_steps",
            "env.max_episode_steps",
        ),
        # The space is refused naming the setting that chose the env, or the wrapper.
        (
            replace(CORRIDOR, entry_point="test_gymnasium:_Unbounded"),
            "env.entry_point",
            "unbounded",
        ),
        (
            replace(CORRIDOR, entry_point="test_gymnasium:_MultiDiscrete"),
            "env.entry_point",
            "MultiDiscrete",
        ),
        (
            replace(CORRIDOR, entry_point="test_gymnasium:_TupleObservations"),
            "env.entry_point",
            "Tuple",
        ),
        (
            replace(CORRIDOR, wrappers=["test_gymnasium:_TupleWrapper"]),
            "env.wrappers",
            "Tuple",
        ),
        (EnvConfig(id="no_such_module:Corridor-v0"), "env.id", "does not import"),
        (EnvConfig(id="CartPole-v1", imports=["no_such_module"]), "env.imports[0]", "no_such"),
        (replace(CORRIDOR, wrappers=["corridor_env:Nothing"]), "env.wrappers[0]", "Nothing"),
        (
            replace(CORRIDOR, wrappers=["gymnasium.wrappers:TimeAwareObservation", "a.b:C"]),
            "env.wrappers[1]",
            "does not import",
        ),
    ],
)
def test_bad_gymnasium_input_fails_before_training_naming_the_field(config, field, says):
    with pytest.raises(ConfigError, match=says) as raised:
        make_spec(config)
    assert raised.value.field == field
    assert "\n" not in str(raised.value)


def test_one_environment_is_named_at_a_time():
    with pytest.raises(ConfigError, match="set together"):
        EnvConfig(task_id="CartPole-v1", id="CartPole-v1")
    with pytest.raises(ConfigError, match="no environment"):
        EnvConfig()


def test_an_envpool_task_without_envpool_says_what_to_do(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "envpool", None)
    with pytest.raises(ConfigError, match="env=gymnasium") as raised:
        make_spec(EnvConfig(task_id="CartPole-v1"))
    assert raised.value.field == "env.task_id"


def test_auto_vectorization_uses_processes_for_batches_worth_a_round_trip():
    from neuroplug.envs.gymnasium_spec import PROCESS_BATCH_SECONDS, pool_workers

    spec = replace(make_spec(CORRIDOR), workers=2, vectorization="auto")
    cheap = replace(spec, step_seconds=PROCESS_BATCH_SECONDS / 100)
    assert pool_workers(cheap, 8) == 0 and pool_workers(cheap, 256) == 2
    assert pool_workers(replace(spec, vectorization="processes", step_seconds=0.0), 1) == 2
    in_process = make_spec(replace(CORRIDOR, vectorization="in_process"))
    assert pool_workers(replace(in_process, step_seconds=1.0), 64) == 0


@pytest.mark.parametrize("workers", [0, 2])
def test_a_send_of_no_envs_is_answered_empty(workers):
    spec = replace(make_spec(CORRIDOR), workers=workers, vectorization="processes")
    pool = make_pool(spec, np.arange(3))
    try:
        pool.send(np.zeros(0, np.int64), np.zeros(0, np.int32))
        observations, rewards, *_ = pool.recv()
        assert observations.shape == (0, 2) and rewards.shape == (0,)
    finally:
        pool.close()
