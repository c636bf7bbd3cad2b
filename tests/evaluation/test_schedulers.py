"""The serial scheduler: correct scores, counters and behaviors against a naive loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.api import EvaluationRequest
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.errors import ConfigError
from neuroplug.evaluation.behaviors import Behavior, resolve
from neuroplug.evaluation.config import ThreadedSchedulerConfig
from neuroplug.evaluation.schedulers import ThreadedScheduler, serial_config
from neuroplug.experiment.network_choice import build_network
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.runtime.seeds import episode_seeds


def _setup(task_id: str, max_episode_steps: int | None = None, hidden=(8,)):
    env = make_spec(EnvConfig(task_id=task_id, max_episode_steps=max_episode_steps))
    network = build_network(NetConfig(hidden_sizes=list(hidden)), env)
    policy = Policy(network, env, normalize_observations=False)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    center = network.initial_params(torch.Generator().manual_seed(0))
    population = Population(
        bases=center.unsqueeze(0),
        base_index=torch.zeros(6, dtype=torch.int64),
        scale=torch.tensor([0.0, 1.0, -1.0, 1.0, -1.0, 3.0]),
        seed=torch.tensor([0, 1, 1, 2, 2, 3]),
    )
    return env, policy, backend, population


def _naive_episode(env, policy, params, seed, behavior: Behavior | None = None):
    """Play one episode with one member in its own single-env pool.

    Returns the return, the length and (if ``behavior`` is given) the episode's BC.
    """
    pool = make_pool(env, np.array([seed]))
    observation, _ = pool.reset()
    total, steps, done = 0.0, 0, False
    while not done:
        outputs = policy.network.forward_single(
            params, torch.from_numpy(observation.astype(np.float32))
        )
        observation, reward, terminated, truncated, info = pool.step(policy.actions(outputs))
        key = env.family.score_info_key
        total += float(info[key][0] if key else reward[0])
        steps += 1
        done = bool(terminated[0] or truncated[0])
    final = behavior.extract(observation, info, np.array([0]))[0] if behavior else None
    return total, steps, final


def test_returns_match_a_naive_one_member_loop():
    env, policy, backend, population = _setup("CartPole-v1")
    scheduler = ThreadedScheduler(serial_config(env_threads=1), env)
    request = EvaluationRequest(generation=3, episodes_per_member=2, seed=11)
    result = scheduler.evaluate(population, policy, backend, request)
    members = population.materialize()
    seeds = episode_seeds(11, 3, np.arange(2))
    for member in (0, 2, 5):
        for episode in range(2):
            total, steps, _ = _naive_episode(env, policy, members[member], seeds[episode])
            assert result.returns[member, episode] == total
            assert result.lengths[member, episode] == steps
    assert result.env_steps == result.lengths.sum() == result.frames
    assert result.forward_passes == result.env_steps
    assert result.episodes == 12
    assert result.behaviors is None  # not asked for


def test_atari_counts_frames_as_four_per_step_and_scores_are_game_scores_and_bcs_are_ram():
    env, policy, backend, population = _setup("Pong-v5", max_episode_steps=60)
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=0, behavior="auto")
    result = ThreadedScheduler(serial_config(), env).evaluate(population, policy, backend, request)
    assert env.frame_skip == 4
    assert (result.lengths == 60).all()  # capped episodes
    assert result.env_steps == 6 * 60
    assert result.frames == 4 * result.env_steps
    # Pong scores are integers in [-21, 21] (unclipped points, not clipped rewards).
    assert np.all(result.returns == np.round(result.returns))
    assert np.all(np.abs(result.returns) <= 21)
    # auto on Atari: the console RAM at the end of each episode, bytes as floats.
    assert result.behaviors.shape == (6, 1, 128)
    assert np.all((result.behaviors >= 0) & (result.behaviors <= 255))
    assert np.array_equal(result.behaviors, np.round(result.behaviors))


@pytest.mark.parametrize("collect", [True, False])
def test_observation_sums_are_returned_only_when_asked(collect):
    env, policy, backend, population = _setup("CartPole-v1")
    request = EvaluationRequest(generation=0, seed=0, collect_obs_stats=collect)
    result = ThreadedScheduler(serial_config(), env).evaluate(population, policy, backend, request)
    if collect:
        assert result.obs_stats.count == result.env_steps
        assert result.obs_stats.total.shape == (4,)
    else:
        assert result.obs_stats is None


# --------------------------------------------------------------------------- behaviors


@pytest.mark.parametrize(
    ("task_id", "name", "max_episode_steps"),
    [
        ("CartPole-v1", "final_obs", None),
        ("Hopper-v4", "final_position", None),
        ("Humanoid-v4", "final_position", 40),
    ],
)
def test_behaviors_match_a_naive_one_member_loop(task_id, name, max_episode_steps):
    env, policy, backend, population = _setup(task_id, max_episode_steps)
    behavior = resolve(name, env)
    scheduler = ThreadedScheduler(serial_config(env_threads=1), env)
    request = EvaluationRequest(generation=1, episodes_per_member=2, seed=7, behavior=name)
    result = scheduler.evaluate(population, policy, backend, request)
    assert result.behaviors.shape == (6, 2, behavior.size)
    members = population.materialize()
    seeds = episode_seeds(7, 1, np.arange(2))
    for member, episode in ((0, 0), (2, 1), (5, 0)):
        total, steps, final = _naive_episode(env, policy, members[member], seeds[episode], behavior)
        assert result.lengths[member, episode] == steps
        # Continuous actions may differ in the last float bit between the batched and the
        # single-member forward pass; the physics carries that into the last digits (a
        # position near zero then differs by more than rtol: hence atol too).
        assert result.returns[member, episode] == pytest.approx(total, rel=1e-6)
        np.testing.assert_allclose(result.behaviors[member, episode], final, rtol=1e-6, atol=1e-6)


def test_a_bc_that_does_not_fit_the_env_fails_before_any_pool_starts(monkeypatch):
    import neuroplug.evaluation.lockstep as lockstep

    def no_pools(*args, **kwargs):
        raise AssertionError("an EnvPool was started")

    monkeypatch.setattr(lockstep, "make_pool", no_pools)
    env, policy, backend, population = _setup("CartPole-v1")
    request = EvaluationRequest(generation=0, behavior="final_ram")
    with pytest.raises(ConfigError, match=r"algo\.behavior: final_ram needs info\['ram'\]"):
        ThreadedScheduler(serial_config(), env).evaluate(population, policy, backend, request)


@pytest.mark.kernels
def test_serial_is_the_threaded_scheduler_with_one_thread_and_one_group(compose):
    from neuroplug import registry

    # One scheduler class, one entry point: scheduler=serial is a preset of it.
    assert "serial" not in registry.discover("schedulers")
    config = compose(["scheduler=serial"]).scheduler
    assert (config.name, config.env_threads, config.groups) == ("threaded", 1, 1)
    assert registry.load("schedulers", config.name) is ThreadedScheduler
    assert compose(["scheduler=serial", "scheduler.env_threads=2"]).scheduler.env_threads == 2
    assert serial_config(max_envs=3) == ThreadedSchedulerConfig(
        name="threaded", max_envs=3, env_threads=1, groups=1
    )
