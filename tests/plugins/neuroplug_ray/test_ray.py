"""``scheduler=ray`` on a local Ray (2 CPUs, started once for the module): the same results
as ``threaded``, whatever the number of workers or a worker's death, resume included, and
populations shipped as descriptions (the deep GA's parents as indices)."""

from __future__ import annotations

import csv
import logging
import signal
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from neuroplug_ray.scheduler import RayScheduler, RaySchedulerConfig  # noqa: E402
from small_evaluation import small_evaluation  # noqa: E402

from neuroplug.api import EvaluationRequest  # noqa: E402
from neuroplug.app import run_job  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.evaluation.config import ThreadedSchedulerConfig  # noqa: E402
from neuroplug.evaluation.schedulers import ThreadedScheduler  # noqa: E402
from neuroplug.testing import check_resume_is_exact  # noqa: E402
from neuroplug.testing.resume_check import same  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module; the schedulers join it instead of starting their own."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


def _ray(env, workers: int, **settings) -> RayScheduler:
    config = RaySchedulerConfig(name="ray", num_workers=workers, members_per_shard=3, **settings)
    return RayScheduler(config, env)


def _assert_identical(result, reference) -> None:
    assert np.array_equal(result.returns, reference.returns)
    assert np.array_equal(result.lengths, reference.lengths)
    assert (result.env_steps, result.frames, result.forward_passes) == (
        reference.env_steps,
        reference.frames,
        reference.forward_passes,
    )
    if reference.behaviors is not None:
        assert np.array_equal(result.behaviors, reference.behaviors)
    if reference.obs_stats is not None:
        assert np.array_equal(result.obs_stats.total, reference.obs_stats.total)
        assert np.array_equal(result.obs_stats.total_squares, reference.obs_stats.total_squares)
        assert result.obs_stats.count == reference.obs_stats.count


@pytest.mark.parametrize(
    ("task_id", "steps", "extra", "network"),
    [
        # Behaviors and observation sums reduce in item order, whoever played which shard.
        ("CartPole-v1", 200, {"behavior": "auto", "collect_obs_stats": True}, {}),
        # Action noise is keyed by the whole population's episode index, not the shard's.
        ("Pendulum-v1", 40, {"action_noise": 0.3}, {}),
        # The reference batch travels with the network: workers normalize by the same one.
        ("CartPole-v1", 200, {}, {"vbn": True}),
    ],
)
@pytest.mark.kernels
def test_ray_gives_exactly_what_threaded_gives(task_id, steps, extra, network):
    env, policy, backend, population = small_evaluation(task_id, 8, steps, **network)
    request = EvaluationRequest(generation=3, episodes_per_member=2, seed=11, **extra)
    threaded = ThreadedScheduler(ThreadedSchedulerConfig(name="threaded", env_threads=1), env)
    reference = threaded.evaluate(population, policy, backend, request)
    scheduler = _ray(env, workers=2)
    calls = []
    request = replace(request, progress=lambda *state: calls.append(state))  # stays local
    try:
        result = scheduler.evaluate(population, policy, backend, request)
    finally:
        scheduler.close()
    _assert_identical(result, reference)
    assert calls[-1] == (16, 16, result.env_steps)
    assert result.stats["shards"] == 3 and result.stats["shard_retries"] == 0


@pytest.mark.kernels
def test_workers_compute_at_the_runs_matmul_precision():
    import torch

    # Products wide enough for oneDNN to take the bfloat16 path.
    env, policy, backend, population = small_evaluation("Pendulum-v1", 8, 40, hidden=256)
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=3)
    threaded = ThreadedScheduler(ThreadedSchedulerConfig(name="threaded", env_threads=1), env)
    before = torch.get_float32_matmul_precision()
    try:
        exact = threaded.evaluate(population, policy, backend, request)
        torch.set_float32_matmul_precision("medium")  # what build_components sets for the run
        reference = threaded.evaluate(population, policy, backend, request)
        if np.array_equal(reference.returns, exact.returns):
            pytest.skip("medium computes these products as highest does on this CPU")
        # One shard of the whole population: oneDNN takes its bfloat16 path by a product's
        # size, so smaller shards may compute as highest does (said in the setting's docs).
        config = RaySchedulerConfig(name="ray", num_workers=1, members_per_shard=8)
        scheduler = RayScheduler(config, env)
        try:
            result = scheduler.evaluate(population, policy, backend, request)
        finally:
            scheduler.close()
    finally:
        torch.set_float32_matmul_precision(before)
    _assert_identical(result, reference)


def test_a_worker_killed_mid_generation_changes_nothing():
    env, policy, backend, population = small_evaluation("CartPole-v1", 8, 200)
    request = EvaluationRequest(generation=0, episodes_per_member=2, seed=5)
    threaded = ThreadedScheduler(ThreadedSchedulerConfig(name="threaded", env_threads=1), env)
    reference = threaded.evaluate(population, policy, backend, request)
    scheduler = _ray(env, workers=2)
    killed = []

    def kill_first_worker(worker, actor, first_member):
        if worker == 0 and not killed:  # it has a shard in flight: the process dies
            ray.kill(actor, no_restart=False)
            killed.append(worker)

    try:
        scheduler.evaluate(population, policy, backend, request)  # workers up and warm
        scheduler.dispatch_hook = kill_first_worker
        result = scheduler.evaluate(population, policy, backend, request)
        scheduler.dispatch_hook = None
        assert killed and result.stats["shard_retries"] >= 1
        _assert_identical(result, reference)
        # Ray restarted the worker: the next round uses both again (it re-fetches the
        # population it lost).
        again = scheduler.evaluate(population, policy, backend, request)
        _assert_identical(again, reference)
    finally:
        scheduler.close()


NETWORK_BYTES = 4 * 67_586
"""A 4-256-256-2 MLP's weights: what one member would cost to send."""


def test_a_shard_that_fails_on_every_retry_fails_the_round_naming_it():
    env, policy, backend, population = small_evaluation("CartPole-v1", 6, 50)
    scheduler = _ray(env, workers=2, shard_retries=1)

    def kill_whoever_plays_the_first_shard(worker, actor, first_member):
        if first_member == 0:
            ray.kill(actor, no_restart=False)

    request = EvaluationRequest(generation=0)
    try:
        scheduler.evaluate(population, policy, backend, request)  # workers up and warm
        scheduler.dispatch_hook = kill_whoever_plays_the_first_shard
        # The trainer retries a failed round, then stops with the checkpoint intact.
        with pytest.raises(RuntimeError, match=r"shard of members \[0, 3\) failed 2 times"):
            scheduler.evaluate(population, policy, backend, request)
    finally:
        scheduler.close()


GA = [
    "algo=ga",
    "env=cartpole",
    "env.max_episode_steps=100",
    "net.hidden_sizes=[256,256]",
    "algo.population_size=12",
    "algo.truncation=4",
    "algo.elite_candidates=3",
    "algo.elite_episodes=2",
    "scheduler=ray",
    "scheduler.members_per_shard=4",
    "scheduler.cpus_per_worker=0.5",  # three workers fit on the module's 2-CPU Ray
    "run.eval_episodes=2",
    "run.max_generations=3",
    "run.stop_when_solved=false",
    "logger=console",
]


def test_the_final_checkpoint_is_the_same_for_one_two_and_three_workers(compose, tmp_path):
    states, bytes_sent = {}, {}
    for workers in (1, 2, 3):
        run_dir = tmp_path / str(workers)
        run_job(compose([*GA, f"scheduler.num_workers={workers}", f"run.output_dir={run_dir}"]))
        states[workers] = load_checkpoint(run_dir)
        rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
        bytes_sent[workers] = [float(row["scheduler/bytes_sent"]) for row in rows]
    for workers in (2, 3):
        for key in ("algorithm", "counters", "last_eval"):
            assert same(states[1][key], states[workers][key]), (workers, key)
    # The deep GA's parents travel as indices into the previous generation: after the
    # first generation (init seeds) a few kilobytes per generation, not T = 4 networks.
    for workers, sent in bytes_sent.items():
        assert all(value < NETWORK_BYTES / 20 for value in sent), (workers, sent)


def test_es_sends_its_center_once_per_generation(compose, tmp_path):
    overrides = [
        "algo=es",
        "env=cartpole",
        "env.max_episode_steps=50",
        "net.hidden_sizes=[256,256]",
        "algo.population_size=16",
        "scheduler=ray",
        "scheduler.members_per_shard=4",
        "run.max_generations=2",
        "run.eval_episodes=2",
        "logger=console",
        f"run.output_dir={tmp_path}",
    ]
    run_job(compose(overrides))
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    for row in rows:
        # The center once, plus O(P) indices, scales and seeds and the shard calls: never
        # P (here 16) weight vectors.
        assert NETWORK_BYTES < float(row["scheduler/bytes_sent"]) < 1.1 * NETWORK_BYTES


@pytest.mark.parametrize(
    "algorithm",
    [
        # Its members travel as the mean, a std per parameter and seeds (a Population with
        # sigma): workers rebuild them, and the search ends in the same state.
        ["algo=sep_cma_es", "env=cartpole"],
        # Every step played comes back from the workers (the replay buffer's content and
        # order), the learner's round explores with action noise, and its critics learn.
        ["algo=erl", "env=pendulum", "algo.population_size=4", "algo.learning_starts=100"],
        # Each episode's descriptor comes back from the workers, so the archive fills the
        # same cells with the same elites.
        ["algo=map_elites", "env=cartpole", "algo.behavior=final_obs", "algo.cells=[3]"]
        + ["algo.bounds=[[-2.5,2.5]]", "algo.population_size=8"],
        # Offspring travel as parents and seeds, and the archive keeps seed chains.
        ["algo=map_elites", "env=cartpole", "algo.behavior=final_obs", "algo.cells=[3]"]
        + ["algo.bounds=[[-2.5,2.5]]", "algo.population_size=8", "algo.variation=gaussian"],
        # A text task's transformer in factored low rank: members travel as a base and
        # seeds, each worker runs the KV-cached model's factored forward.
        ["algo=es", "env=sorting", "env.kwargs.length=3", "net.type=causal_lm"]
        + ["net.kwargs.d_model=16", "net.kwargs.heads=2", "net.kwargs.layers=1"]
        + ["algo.perturbation=lowrank", "algo.lowrank_min_size=200", "algo.population_size=8"]
        + ["algo.episodes_per_member=2"],
        # Coevolution: games of two members, or of a member and its hall of fame, drawn on
        # the driver; shards hold whole worlds.
        ["algo=ga", "env=pong_duel", "env.kwargs.points=1", "selfplay=pool"]
        + ["selfplay.pool_size=2", "algo.population_size=6"],
        # Two populations coevolving, with a hall of fame each: joined into one population,
        # their games drawn on the driver.
        ["algo=es", "env=pong_duel", "env.kwargs.points=1", "env.policy_mapping=per_agent"]
        + ["algo.population_size=6", "selfplay=pool", "selfplay.pool_size=2"],
    ],
    ids=[
        "sep_cma_es",
        "erl",
        "map_elites",
        "map_elites_gaussian",
        "es_text_lowrank",
        "ga_self_play",
        "es_two_populations",
    ],
)
def test_an_algorithm_on_ray_ends_where_the_serial_scheduler_does(compose, tmp_path, algorithm):
    common = [*algorithm, "env.max_episode_steps=50", "run.max_generations=2"]
    if "net.type=causal_lm" not in algorithm:
        common.append("net.hidden_sizes=[16]")
    common += ["run.eval_episodes=2"]
    common += ["logger=none", "run.stop_when_solved=false"]
    on_ray = ["scheduler=ray", "scheduler.members_per_shard=2", "scheduler.num_workers=2"]
    on_ray.append("scheduler.cpus_per_worker=0.5")
    states = {}
    for name, scheduler in (("serial", ["scheduler=serial"]), ("ray", on_ray)):
        run_job(compose([*common, *scheduler, f"run.output_dir={tmp_path / name}"]))
        states[name] = load_checkpoint(tmp_path / name)
    for key in ("algorithm", "loop", "counters", "last_eval"):
        assert same(states["serial"].get(key), states["ray"].get(key)), key


def test_ray_resumes_bit_identically(compose, tmp_path):
    overrides = [
        "algo=es",
        "env=pendulum",
        "env.max_episode_steps=30",
        "net.hidden_sizes=[8]",
        "algo.population_size=8",
        "algo.action_noise=0.1",
        "scheduler=ray",
        "scheduler.members_per_shard=3",
        "scheduler.num_workers=2",
    ]
    check_resume_is_exact(compose, overrides, tmp_path, generations=2, stop_at=1)


def test_more_workers_than_the_cluster_can_place_fail_before_any_work():
    env, policy, backend, population = small_evaluation("CartPole-v1", 4, 20)
    scheduler = _ray(env, workers=3)  # 3 x 1 CPU on a 2-CPU Ray
    with pytest.raises(ConfigError, match=r"scheduler.num_workers.*need 3 CPUs.*has 2"):
        scheduler.evaluate(population, policy, backend, EvaluationRequest(generation=0))
    scheduler.close()


@pytest.mark.parametrize(
    ("field", "value"),
    [("num_workers", 0), ("cpus_per_worker", 0), ("members_per_shard", 0), ("shard_retries", -1)],
)
def test_bad_ray_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"scheduler.{field}"):
        RaySchedulerConfig(name="ray", **{field: value})


def test_sigterm_still_checkpoints_and_stops_with_an_embedded_ray(tmp_path):
    """Ray installs its own signal handlers; the scheduler keeps neuroplug's."""
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "scheduler=ray",
        "scheduler.cpus_per_worker=0.5",
        "logger=console",
        "net.hidden_sizes=[16]",
        "algo.population_size=16",
        "run.max_generations=1000",
        "run.stop_when_solved=false",
        "run.eval_interval=0",
        f"run.output_dir={run_dir}",
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
    )
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("gen    2"):
            break
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=120)
    text = "".join(lines) + output
    assert process.returncode == 0, text
    state = load_checkpoint(run_dir)
    assert f"interrupted: checkpoint of generation {state['generation']} written" in text
