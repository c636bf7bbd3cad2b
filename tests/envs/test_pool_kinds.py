"""A kind of env pool is one package: a simulator registered under ``neuroplug.env_pools``
trains with the evaluation engine and with a learner's sampler, nothing else told of it."""

from __future__ import annotations

import sys

import pytest
from fake_distribution import install_distribution

from neuroplug import registry
from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs import pool_kinds
from neuroplug.envs.make import make_pool, make_spec

WALK = '''
import numpy as np

from neuroplug.envs.families import family_named
from neuroplug.envs.pool_kind import PoolKind
from neuroplug.envs.raw_steps import StepBatch
from neuroplug.envs.spec import EnvSpec

LENGTH, STEPS = 6, 12


class WalkPool:
    """A corridor per slot: action 1 steps right (reward 1), 0 stays; the far end ends the
    episode, STEPS steps cut it."""

    def __init__(self, seeds):
        self.position = np.zeros(len(seeds))
        self.time = np.zeros(len(seeds), dtype=np.int64)
        self.ended = np.ones(len(seeds), dtype=bool)
        self.results = []

    def observe(self, ids):
        return np.stack([self.position[ids] / LENGTH, self.time[ids] / STEPS], 1).astype(np.float32)

    def async_reset(self):
        ids = np.arange(len(self.position), dtype=np.int32)
        self.position[:], self.time[:], self.ended[:] = 0, 0, False
        none = np.zeros(len(ids), dtype=bool)
        self.results.append((self.observe(ids), np.zeros(len(ids), np.float32), none, none, {"env_id": ids}))

    def send(self, actions, env_ids):
        ids = np.asarray(env_ids, dtype=np.int32)
        rewards = np.zeros(len(ids), np.float32)
        terminated, truncated = np.zeros(len(ids), bool), np.zeros(len(ids), bool)
        for row, slot in enumerate(ids):
            if self.ended[slot]:
                self.position[slot], self.time[slot], self.ended[slot] = 0, 0, False
                continue
            step = int(actions[row])
            self.position[slot] += step
            self.time[slot] += 1
            rewards[row] = step
            terminated[row] = self.position[slot] >= LENGTH
            truncated[row] = not terminated[row] and self.time[slot] >= STEPS
            self.ended[slot] = terminated[row] or truncated[row]
        self.results.append((self.observe(ids), rewards, terminated, truncated, {"env_id": ids}))

    def recv(self):
        return self.results.pop(0)

    def close(self):
        pass


class WalkSteps:
    def __init__(self, pool):
        self.pool = pool

    def reset(self):
        self.pool.async_reset()

    def send(self, actions, env_ids):
        self.pool.send(actions, env_ids)

    def recv(self):
        observations, rewards, terminated, truncated, info = self.pool.recv()
        done = terminated | truncated
        return StepBatch(info["env_id"], observations, rewards, done, truncated, rewards, done)

    def close(self):
        self.pool.close()


class WalkPools(PoolKind):
    name = "walk"

    def serves(self, config):
        return config.task_id == "Walk-v0"

    def make_spec(self, config):
        return EnvSpec(
            task_id="Walk-v0", family=family_named("classic"), obs_shape=(2,),
            obs_dtype=np.dtype(np.float32), discrete=True, num_actions=2, action_low=None,
            action_high=None, frame_skip=1, max_episode_steps=STEPS, solved_return=float(LENGTH),
            pool_kind=self,
        )

    def make_pool(self, spec, seeds, num_threads, overrides):
        return WalkPool(seeds)

    def step_batches(self, pool, family):
        return WalkSteps(pool)

    def info_keys(self, spec):
        return frozenset()
'''


@pytest.fixture
def walk_simulator(tmp_path, monkeypatch):
    """An installed package that adds the Walk-v0 simulator as a pool kind."""
    install_distribution(
        tmp_path,
        "neuroplug-walk",
        {"neuroplug.env_pools": {"walk": "neuroplug_walk:WalkPools"}},
        {"neuroplug_walk.py": WALK},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    pool_kinds.pool_kinds.cache_clear()
    yield
    pool_kinds.pool_kinds.cache_clear()
    sys.modules.pop("neuroplug_walk", None)


def test_a_packages_pool_kind_serves_the_envs_it_names(walk_simulator):
    spec = make_spec(EnvConfig(task_id="Walk-v0"))
    assert spec.pool_kind.name == "walk" and spec.obs_shape == (2,)
    pool = make_pool(spec, [3, 4])
    pool.async_reset()
    assert pool.recv()[0].shape == (2, 2)
    assert make_spec(EnvConfig(id="CartPole-v1")).pool_kind.name == "gymnasium"
    listed = {(info.kind, info.name, info.distribution) for info in registry.describe_all()}
    assert ("env_pools", "walk", "neuroplug-walk") in listed  # --list-plugins shows it


@pytest.mark.parametrize("algo", ["es", "ppo"])
def test_evolution_and_a_learner_train_on_a_packages_simulator(
    walk_simulator, compose, tmp_path, algo
):
    budget = ["run.max_generations=3"] if algo == "es" else ["run.max_frames=512"]
    overrides = [f"algo={algo}", "env=envpool", "env.task_id=Walk-v0", "logger=none"]
    overrides += [*budget, "run.eval_interval=0", f"run.output_dir={tmp_path}"]
    if algo == "es":
        overrides.append("algo.population_size=8")
    else:
        overrides += ["algo.num_envs=4", "algo.rollout_length=32", "algo.segment_steps=256"]
    summary = run_job(compose(overrides))
    assert summary["env_steps"] > 0 and summary["eval_return_mean"] > 0, summary
