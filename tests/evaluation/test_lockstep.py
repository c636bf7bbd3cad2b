"""Every lockstep schedule plays the same episodes; lanes stay full; dead envs are not stepped."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from small_evaluation import small_evaluation

import neuroplug.evaluation.lockstep as lockstep
from neuroplug.api import EvaluationRequest
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.evaluation.config import PipelinedSchedulerConfig, ThreadedSchedulerConfig
from neuroplug.evaluation.schedulers import PipelinedScheduler, ThreadedScheduler, serial_config
from neuroplug.evaluation.transitions import transition_rows


def _schedulers(env, max_envs: int):
    return {
        "serial": ThreadedScheduler(serial_config(max_envs=max_envs), env),
        "threaded": ThreadedScheduler(
            ThreadedSchedulerConfig(name="threaded", max_envs=max_envs, env_threads=2), env
        ),
        "pipelined-2": PipelinedScheduler(
            PipelinedSchedulerConfig(name="pipelined", max_envs=max_envs, env_threads=2), env
        ),
        "pipelined-3": PipelinedScheduler(
            PipelinedSchedulerConfig(name="pipelined", max_envs=max_envs, groups=3), env
        ),
    }


def _assert_identical(results: dict) -> None:
    reference = results.pop("serial")
    for name, result in results.items():
        assert np.array_equal(result.returns, reference.returns), name
        assert np.array_equal(result.lengths, reference.lengths), name
        assert (result.env_steps, result.frames, result.forward_passes) == (
            reference.env_steps,
            reference.frames,
            reference.forward_passes,
        ), name
        if reference.behaviors is not None:
            assert np.array_equal(result.behaviors, reference.behaviors), name
        if reference.transitions is not None:
            for field in ("observations", "actions", "rewards", "next_observations", "members"):
                assert np.array_equal(
                    getattr(result.transitions, field), getattr(reference.transitions, field)
                ), (name, field)
        if reference.obs_stats is not None:
            assert np.array_equal(result.obs_stats.total, reference.obs_stats.total), name
            assert np.array_equal(
                result.obs_stats.total_squares, reference.obs_stats.total_squares
            ), name


@pytest.mark.parametrize(
    ("task_id", "members", "episodes", "max_envs", "max_episode_steps", "extra"),
    [
        # More episodes than lanes: lanes are refilled; BCs and observation sums too.
        ("CartPole-v1", 9, 3, 5, None, {"behavior": "auto", "collect_obs_stats": True}),
        # Continuous actions with exploration noise, which must not depend on step order,
        # and every step's transition (CEM-RL, ERL) in the same order whatever the schedule.
        ("Pendulum-v1", 6, 2, 4, 60, {"action_noise": 0.3, "transitions": True}),
        # Atari: frames, game scores and final RAM.
        ("Pong-v5", 4, 1, 3, 20, {"behavior": "auto"}),
    ],
)
@pytest.mark.kernels
def test_all_schedulers_return_identical_results(
    task_id, members, episodes, max_envs, max_episode_steps, extra
):
    env, policy, backend, population = small_evaluation(task_id, members, max_episode_steps)
    request = EvaluationRequest(generation=2, episodes_per_member=episodes, seed=3, **extra)
    results = {
        name: scheduler.evaluate(population, policy, backend, request)
        for name, scheduler in _schedulers(env, max_envs).items()
    }
    assert results["serial"].episodes == members * episodes
    serial = results["serial"]
    if env.start_noops:  # an Atari episode's no-op start steps the env without the policy
        assert 0 < serial.forward_passes < serial.env_steps
    else:
        assert serial.forward_passes == serial.env_steps
    _assert_identical(results)


@pytest.mark.kernels
def test_results_do_not_depend_on_thread_counts():
    env, policy, backend, population = small_evaluation("CartPole-v1", 7)
    request = EvaluationRequest(generation=0, episodes_per_member=2, seed=1)
    one = ThreadedScheduler(serial_config(max_envs=4, env_threads=1), env)
    four = ThreadedScheduler(ThreadedSchedulerConfig(name="t", max_envs=4, env_threads=4), env)
    _assert_identical(
        {
            "serial": one.evaluate(population, policy, backend, request),
            "threaded": four.evaluate(population, policy, backend, request),
        }
    )


class _RecordingEvaluation(lockstep.LockstepEvaluation):
    """Records, for every send: lanes stepped, lanes in the group, whether work was pending."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sends: list[tuple[int, int, bool]] = []

    def _send(self, group, lanes, actions) -> None:
        pending = self.next_item < len(self.ledger)
        self.sends.append((len(lanes), len(group.lanes), pending))
        super()._send(group, lanes, actions)


@pytest.mark.parametrize("groups", [1, 2])
def test_lanes_stay_full_until_the_work_runs_out_and_dead_envs_are_not_stepped(groups):
    env, policy, backend, population = small_evaluation("CartPole-v1", 10)
    max_envs = 4
    request = EvaluationRequest(generation=0, episodes_per_member=3, seed=0)
    evaluation = _RecordingEvaluation(
        env, population, policy, backend, request, max_envs, groups, env_threads=1
    )
    result = evaluation.run()
    assert result.episodes == 30 > max_envs
    # While items are pending, every lane of a group is stepped in every cycle.
    for stepped, group_size, pending in evaluation.sends:
        assert stepped == group_size or not pending
    # Every env step is an agent step or the reset starting an episode; a lane whose work
    # has run out is not stepped again (beyond at most one spare reset).
    stepped = sum(count for count, _, _ in evaluation.sends)
    assert result.env_steps + result.episodes <= stepped <= result.env_steps + 30 + max_envs


@pytest.mark.parametrize(
    ("task_id", "max_envs", "lanes"),
    [
        ("CartPole-v1", None, 600),  # classic control: 1,024 lanes unless set
        ("CartPole-v1", 300, 300),
        ("HalfCheetah-v4", None, 256),  # the other families: 256
    ],
)
def test_an_unset_max_envs_takes_the_env_familys_lane_count(task_id, max_envs, lanes):
    env, policy, backend, population = small_evaluation(task_id, 200)
    request = EvaluationRequest(generation=0, episodes_per_member=3, seed=0)
    evaluation = lockstep.LockstepEvaluation(
        env, population, policy, backend, request, max_envs, 1, env_threads=1
    )
    assert evaluation.num_lanes == lanes


def test_timing_breakdown_is_reported():
    env, policy, backend, population = small_evaluation("CartPole-v1", 4)
    request = EvaluationRequest(generation=0, seed=0)
    for scheduler in _schedulers(env, 2).values():
        timings = scheduler.evaluate(population, policy, backend, request).timings
        for phase in ("env_setup", "env", "inference", "env_idle", "overlap", "bookkeeping"):
            assert timings[phase] >= 0.0
        assert timings["wall"] >= timings["env"] + timings["inference"]


def test_pipelined_needs_two_groups():
    with pytest.raises(ConfigError, match=r"scheduler\.groups"):
        PipelinedSchedulerConfig(name="pipelined", groups=1)


NETWORKS = {
    "mlp": ["net.hidden_sizes=[8]"],
    # A module of the user's own (tests/support), batched by torch.func over members.
    "module": ["net.type=module", "net.module=residual_net:ResidualMLP", "net.kwargs.width=8"],
}


@pytest.mark.parametrize("network", sorted(NETWORKS))
@pytest.mark.parametrize("device", ["cpu", *(["cuda"] if torch.cuda.is_available() else [])])
@pytest.mark.kernels
def test_training_ends_in_the_same_state_with_every_scheduler(compose, tmp_path, device, network):
    """End to end: ES on Pendulum (action noise, observation normalizer, refilled lanes),
    on the CPU and, where the suite finds one, on the GPU; the backend in fixed tiles, so
    no member's outputs depend on which others share its call."""
    from neuroplug.app import run_job
    from neuroplug.testing.resume_check import same
    from neuroplug.training.checkpoint import load_checkpoint

    states = {}
    for name in ("serial", "threaded", "pipelined"):
        run_dir = tmp_path / name
        overrides = [
            "algo=es",
            "env=pendulum",
            "env.max_episode_steps=50",
            "algo.population_size=12",
            "algo.action_noise=0.1",
            *NETWORKS[network],
            f"scheduler={name}",
            "scheduler.max_envs=5",
            f"backend.device={device}",
            "backend.batching=tiles",
            "logger=none",
            "run.max_generations=2",
            "run.eval_episodes=2",
            f"run.output_dir={run_dir}",
        ]
        run_job(compose(overrides))
        states[name] = load_checkpoint(run_dir)
    assert same(states["serial"]["algorithm"], states["threaded"]["algorithm"])
    assert same(states["serial"]["algorithm"], states["pipelined"]["algorithm"])
    for key in ("counters", "normalizer"):
        assert same(states["serial"][key], states["pipelined"][key]), key
    if device == "cpu":
        assert same(states["serial"]["last_eval"], states["pipelined"]["last_eval"])
    else:  # torch's CUDA kernels round by batch shape: the evaluation agrees to rounding
        for name in ("threaded", "pipelined"):
            assert states[name]["last_eval"] == pytest.approx(states["serial"]["last_eval"])


def test_progress_is_reported_while_playing_and_ends_at_the_totals():
    env, policy, backend, population = small_evaluation("CartPole-v1", 6)
    calls = []
    request = EvaluationRequest(
        generation=0, episodes_per_member=2, progress=lambda *state: calls.append(state)
    )
    scheduler = ThreadedScheduler(ThreadedSchedulerConfig(name="threaded", max_envs=4), env)
    result = scheduler.evaluate(population, policy, backend, request)
    assert calls[-1] == (12, 12, result.env_steps)
    done = [episodes for episodes, _, _ in calls]
    assert done == sorted(done)  # never goes back


def test_atari_episodes_start_with_their_own_seeded_noops_in_pools_kept_across_evaluations(
    monkeypatch,
):
    """Atari without sticky actions: the engine plays each episode's 0-30 no-ops (drawn
    from its seed) with EnvPool's own random no-ops off, and keeps its pools from one
    evaluation to the next; an evaluation on kept pools plays exactly what one on fresh
    pools plays, whatever the schedule."""
    from neuroplug.runtime.seeds import start_noop_counts

    env, policy, backend, population = small_evaluation("Breakout-v5", 6, max_episode_steps=60)
    assert env.start_noops == 30 and env.reusable_pools
    counts = start_noop_counts(0, 3, np.arange(64), 0, env.start_noops)
    assert counts.min() >= 0 and counts.max() <= 30 and len(set(counts.tolist())) > 10
    built = []
    real_make_pool = lockstep.make_pool

    def counting_make_pool(spec, seeds, num_threads, **overrides):
        built.append(overrides)
        return real_make_pool(spec, seeds, num_threads, **overrides)

    monkeypatch.setattr(lockstep, "make_pool", counting_make_pool)
    request = EvaluationRequest(generation=3, episodes_per_member=2, seed=0)
    results = {}
    for name, scheduler in _schedulers(env, max_envs=4).items():
        first = scheduler.evaluate(population, policy, backend, request)
        pools_built = len(built)
        again = scheduler.evaluate(population, policy, backend, request)
        assert len(built) == pools_built, f"{name} rebuilt its pools"
        assert np.array_equal(first.returns, again.returns), name
        assert np.array_equal(first.lengths, again.lengths), name
        scheduler.close()
        results[name] = again
    assert all(overrides == {"noop_max": 1} for overrides in built)
    # Every episode's length includes its no-ops: the start is the engine's, not EnvPool's.
    _assert_identical(results)


def test_sticky_actions_keep_building_seeded_pools_per_evaluation(monkeypatch):
    env = make_spec(
        EnvConfig(
            task_id="Breakout-v5",
            max_episode_steps=20,
            kwargs={"repeat_action_probability": 0.25},
        )
    )
    assert not env.reusable_pools
    _, policy, backend, population = small_evaluation("Breakout-v5", 2, max_episode_steps=20)
    built = []
    real_make_pool = lockstep.make_pool
    monkeypatch.setattr(
        lockstep,
        "make_pool",
        lambda *args, **kwargs: built.append(1) or real_make_pool(*args, **kwargs),
    )
    scheduler = ThreadedScheduler(serial_config(max_envs=2), env)
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=0)
    scheduler.evaluate(population, policy, backend, request)
    scheduler.evaluate(population, policy, backend, request)
    assert len(built) == 2


def test_pools_built_before_a_failing_one_are_closed(monkeypatch):
    env, policy, backend, population = small_evaluation("CartPole-v1", 6)
    built = []
    real_make_pool = lockstep.make_pool

    def second_build_fails(*args, **kwargs):
        if built:
            raise RuntimeError("simulator failed to start")
        pool = real_make_pool(*args, **kwargs)
        closed = []
        real_close = pool.close
        pool.close = lambda: closed.append(1) or real_close()
        built.append(closed)
        return pool

    monkeypatch.setattr(lockstep, "make_pool", second_build_fails)
    scheduler = PipelinedScheduler(
        PipelinedSchedulerConfig(name="pipelined", max_envs=6, groups=3), env
    )
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=0)
    with pytest.raises(RuntimeError, match="failed to start"):
        scheduler.evaluate(population, policy, backend, request)
    assert built == [[1]]  # the one pool built was closed, once


def test_threaded_pipelines_image_tasks_whose_inference_runs_on_a_gpu():
    """groups=0 (auto): two groups in flight for an image task on a GPU backend (what
    measured fastest on an H100), alternation for anything else; an explicit count wins."""
    from types import SimpleNamespace

    atari = make_spec(EnvConfig(task_id="Breakout-v5", max_episode_steps=20))
    cartpole = make_spec(EnvConfig(task_id="CartPole-v1"))
    gpu = SimpleNamespace(device=torch.device("cuda"))
    cpu = SimpleNamespace(device=torch.device("cpu"))

    def groups(env, backend, **config):
        return ThreadedScheduler(ThreadedSchedulerConfig(name="threaded", **config), env).groups(
            backend
        )

    assert groups(atari, gpu) == 2
    assert groups(atari, cpu) == groups(cartpole, gpu) == groups(cartpole, cpu) == 1
    assert groups(atari, gpu, groups=1) == 1
    with pytest.raises(ConfigError, match=r"scheduler\.groups"):
        ThreadedSchedulerConfig(name="threaded", groups=-1)


def test_a_recurrent_core_starts_every_episode_from_zeros(monkeypatch):
    # One lane plays all 12 episodes in turn: each must start from a zero state, not from
    # where the lane's previous episode left it.
    env, policy, backend, population = small_evaluation("CartPole-v1", 4, core="gru")
    forward, starts = backend.forward_with_state, []

    def recording(members, inputs, state):
        starts.extend(bool(row) for row in (state == 0).all(dim=1))
        return forward(members, inputs, state)

    monkeypatch.setattr(backend, "forward_with_state", recording)
    request = EvaluationRequest(generation=1, episodes_per_member=3, seed=5)
    result = ThreadedScheduler(serial_config(max_envs=1), env).evaluate(
        population, policy, backend, request
    )
    assert sum(starts) == result.episodes == 12
    assert len(starts) == result.forward_passes


@pytest.mark.parametrize(
    "network", [{"core": "gru"}, {"vbn": True}], ids=["recurrent", "virtual-batch-norm"]
)
@pytest.mark.kernels
def test_every_scheduler_plays_a_recurrent_or_normalized_population_identically(network):
    env, policy, backend, population = small_evaluation("CartPole-v1", 7, **network)
    request = EvaluationRequest(generation=2, episodes_per_member=2, seed=3)
    results = {
        name: scheduler.evaluate(population, policy, backend, request)
        for name, scheduler in _schedulers(env, 5).items()
    }
    _assert_identical(results)


def test_a_recurrent_core_carries_its_state_through_an_episode(monkeypatch):
    env, policy, backend, population = small_evaluation("CartPole-v1", 4, core="gru")
    request = EvaluationRequest(generation=1, episodes_per_member=2, seed=5)
    scheduler = ThreadedScheduler(serial_config(max_envs=4), env)
    carried = scheduler.evaluate(population, policy, backend, request)
    # The same evaluation with the state dropped at every step: a different policy.
    forward = backend.forward_with_state
    monkeypatch.setattr(
        backend,
        "forward_with_state",
        lambda members, inputs, state: forward(members, inputs, torch.zeros_like(state)),
    )
    dropped = scheduler.evaluate(population, policy, backend, request)
    assert not np.array_equal(carried.lengths, dropped.lengths)


def test_transitions_are_every_step_played_chained_within_each_episode():
    env, policy, backend, population = small_evaluation("CartPole-v1", 4, None)
    request = EvaluationRequest(generation=1, episodes_per_member=2, seed=5, transitions=True)
    result = ThreadedScheduler(serial_config(max_envs=3), env).evaluate(
        population, policy, backend, request
    )
    played = result.transitions
    assert len(played) == result.env_steps == result.lengths.sum()
    assert np.array_equal(np.bincount(played.members, minlength=4), result.lengths.sum(axis=1))
    # Ordered by member, episode and step: each episode's steps follow on from each other
    # and it ends terminated (CartPole's pole fell) exactly where its length says.
    ends = np.cumsum(result.lengths.reshape(-1))
    starts = np.concatenate(([0], ends[:-1]))
    for start, end, total in zip(starts, ends, result.returns.reshape(-1), strict=True):
        episode = transition_rows(played, np.arange(start, end))
        assert np.array_equal(episode.next_observations[:-1], episode.observations[1:])
        assert episode.rewards.sum() == pytest.approx(total)
        assert not episode.terminated[:-1].any()
        assert episode.terminated[-1] == (end - start < 500)
    assert played.actions.dtype == np.int32 and set(np.unique(played.actions)) <= {0, 1}
