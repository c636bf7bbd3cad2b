"""``scheduler=ray`` for learners on a local Ray (2 CPUs, started once for the module): the
envs' shards on sampler actors give the local sharded run's bits for any number of
workers, a killed actor is replaced, and settings that cannot hold fail before training."""

from __future__ import annotations

import logging

import pytest

ray = pytest.importorskip("ray")

from neuroplug.app import run_job  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.testing.resume_check import same  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

PPO = [
    "algo=ppo",
    "env=cartpole",
    "net.hidden_sizes=[16]",
    "algo.num_envs=8",
    "algo.rollout_length=16",
    "algo.segment_steps=256",
    "scheduler.envs_per_shard=2",
    "run.max_segments=2",
    "run.eval_interval=0",
    "logger=none",
]


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One local Ray for the module; the schedulers join it instead of starting their own."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


def _on_ray(workers: int) -> list[str]:
    return ["scheduler=ray", f"scheduler.num_workers={workers}", "scheduler.cpus_per_worker=0.5"]


def _final_state(compose, tmp_path, name: str, overrides: list[str]):
    run_dir = tmp_path / name
    run_job(compose([*overrides, f"run.output_dir={run_dir}"]))
    return load_checkpoint(run_dir)


def test_ppo_ends_in_the_local_sharded_state_for_one_two_and_three_workers(compose, tmp_path):
    local = _final_state(compose, tmp_path, "local", [*PPO, "scheduler=threaded"])
    for workers in (1, 2, 3):
        state = _final_state(compose, tmp_path, f"ray{workers}", [*PPO, *_on_ray(workers)])
        assert same(state["algorithm"], local["algorithm"]), workers
        assert same(state["counters"], local["counters"]), workers


def test_a_recurrent_ppo_on_ray_ends_in_the_local_sharded_state(compose, tmp_path):
    # The actors keep each env's core state and ship the states each step acted from.
    recurrent = [*PPO, "net.core=gru", "net.core_size=8", "algo.recurrence=8"]
    local = _final_state(compose, tmp_path, "local", [*recurrent, "scheduler=threaded"])
    state = _final_state(compose, tmp_path, "ray", [*recurrent, *_on_ray(2)])
    assert same(state["algorithm"], local["algorithm"])
    assert same(state["counters"], local["counters"])


@pytest.mark.parametrize("core", ["none", "gru"])
def test_a_population_on_ray_is_the_local_sharded_population(compose, tmp_path, core):
    pbt = [
        f"net.core={core}",
        "algo=pbt",
        "env=cartpole",
        "net.hidden_sizes=[8]",
        "algo.members=2",
        "algo.member.num_envs=4",
        "algo.member.rollout_length=16",
        "algo.member.segment_steps=128",
        "algo.interval_frames=128",
        "scheduler.envs_per_shard=2",
        "run.max_segments=2",
        "run.eval_interval=0",
        "logger=none",
    ]
    local = _final_state(compose, tmp_path, "local", [*pbt, "scheduler=threaded"])
    state = _final_state(compose, tmp_path, "ray", [*pbt, *_on_ray(2)])
    assert same(state["algorithm"], local["algorithm"])


def test_members_learning_in_each_others_leagues_on_ray_is_the_local_sharded_run(compose, tmp_path):
    """PBT over self-play, each member in the other's pool: the steps a member played in
    the other's worlds on an actor teach it as they do here."""
    pytest.importorskip("pettingzoo")
    pytest.importorskip("openskill")
    members = [
        "algo=pbt",
        "algo.learner=ppo",
        "algo.members=2",
        "algo.member.num_envs=4",
        "algo.member.segment_steps=512",
        "env=pong_duel",
        "selfplay=pool",
        "selfplay.members=true",
        "selfplay.members_learn=true",
        "selfplay.latest_share=0",
        "selfplay.pool_size=0",
        "net.hidden_sizes=[8]",
        "scheduler.envs_per_shard=2",
        "run.max_segments=2",
        "run.eval_interval=0",
        "logger=none",
    ]
    local = _final_state(compose, tmp_path, "local", [*members, "scheduler=threaded"])
    state = _final_state(compose, tmp_path, "ray", [*members, *_on_ray(2)])
    leagues = local["algorithm"]["self_play"]["leagues"]
    assert all(sum(sum(e["results"].values()) for e in pool["entries"]) for pool in leagues)
    assert same(state["algorithm"], local["algorithm"])


def test_a_policy_per_team_on_ray_is_the_local_sharded_run(compose, tmp_path):
    """mpe2's simple_tag with the adversaries' and the runner's policies: each shard holds
    whole worlds, its lanes acted by their team's policy in one forward, on any actor."""
    pytest.importorskip("mpe2")
    teams = [
        "algo=ppo",
        "env=simple_tag",
        "env.kwargs.max_cycles=20",
        "env.policy_mapping=per_team",
        "net.hidden_sizes=[8]",
        "algo.num_envs=8",  # two worlds of four agents
        "algo.rollout_length=8",
        "algo.segment_steps=128",
        "scheduler.envs_per_shard=4",
        "run.max_segments=2",
        "run.eval_interval=0",
        "logger=none",
    ]
    local = _final_state(compose, tmp_path, "local", [*teams, "scheduler=threaded"])
    state = _final_state(compose, tmp_path, "ray", [*teams, *_on_ray(2)])
    assert same(state["algorithm"], local["algorithm"])
    assert same(state["counters"], local["counters"])


@pytest.mark.parametrize("mapping", ["shared", "per_agent"])
def test_self_play_on_ray_is_the_local_sharded_run(compose, tmp_path, mapping):
    """PPO against its pool and a bot (or, a policy per paddle, each against the other's
    hall of fame) on two actors: each shard's worlds are seated where they are stepped,
    from their own streams, and their records booked here in (step, world) order: the
    same learners, pools, results and ratings as in this process."""
    pytest.importorskip("pettingzoo")
    pytest.importorskip("openskill")
    opponents = (
        ["selfplay.bots=[random]"]
        if mapping == "shared"
        else ["env.policy_mapping=per_agent", "selfplay.snapshot_interval=1"]
    )
    game = [
        "algo=ppo",
        "env=pong_duel",
        "selfplay=pool",
        *opponents,
        "net.hidden_sizes=[8]",
        "algo.num_envs=8",  # four worlds of two paddles
        "algo.segment_steps=2048",
        "scheduler.envs_per_shard=2",
        "run.max_segments=2",
        "run.eval_interval=0",
        "logger=none",
    ]
    local = _final_state(compose, tmp_path, "local", [*game, "scheduler=threaded"])
    state = _final_state(compose, tmp_path, "ray", [*game, *_on_ray(2)])
    pool = local["algorithm"]["self_play"]
    pools = pool["halls"] if mapping != "shared" else [pool]
    games = sum(sum(e["results"].values()) for each in pools for e in each["entries"])
    assert games > 0
    assert same(state["algorithm"], local["algorithm"])
    assert same(state["counters"], local["counters"])


@pytest.mark.parametrize("core", ["none", "gru"])
def test_appo_learns_from_actors_that_sample_on_meanwhile(compose, core):
    appo = [*PPO, *_on_ray(2), f"net.core={core}", "net.core_size=8"]
    appo[0] = "algo=appo"
    parts = build_components(typed_experiment(compose(appo)))
    learner = parts.algorithm
    try:
        assert learner.sampler.asynchronous
        segment = learner.train_segment()
        assert segment.env_steps > 0 and segment.stats["rollouts_learned"] >= 1
        # Each actor has a rollout in flight when the segment ends: it samples on.
        assert len(learner.sampler._in_flight) == 2
        assert learner.train_segment().stats["rollouts_learned"] >= 1
    finally:
        learner.close()
        parts.scheduler.close()


def test_a_killed_sampler_actor_is_replaced_and_the_run_goes_on(compose):
    parts = build_components(typed_experiment(compose([*PPO, *_on_ray(2)])))
    learner = parts.algorithm
    try:
        learner.train_segment()
        steps = learner.env_steps
        ray.kill(learner.sampler.actors[0], no_restart=False)  # Ray restarts it
        segment = learner.train_segment()
        assert segment.stats["sampler_restarts"] == 1
        assert learner.env_steps > steps and segment.env_steps > 0
        assert any("died and was replaced" in notice for notice in learner.notices)
        assert learner.train_segment().stats["sampler_restarts"] == 0
    finally:
        learner.close()
        parts.scheduler.close()


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        (["scheduler.num_workers=5"], "scheduler.num_workers", "5 sampler workers for 4 shards"),
        (["scheduler.envs_per_shard=3"], "scheduler.envs_per_shard", "3 does not divide"),
        (["scheduler.address=127.0.0.1:9"], "scheduler.address", "nothing answers at"),
        (
            ["scheduler.num_workers=2", "scheduler.cpus_per_worker=4"],
            "scheduler.num_workers",
            r"2 workers x scheduler.cpus_per_worker=4.0 need 8 CPUs but the Ray cluster has 2",
        ),
        (["scheduler.gpus_per_worker=1"], "scheduler.gpus_per_worker", "is 1.0, but a learner"),
    ],
)
def test_settings_that_cannot_hold_on_ray_fail_before_training(compose, overrides, field, message):
    if field == "scheduler.address":
        ray.shutdown()  # joining an address needs a process not yet in a Ray
    try:
        with pytest.raises(ConfigError, match=rf"^{field}: {message}"):
            build_components(
                typed_experiment(
                    compose([*PPO, *_on_ray(2), "scheduler.cpus_per_worker=0.1", *overrides])
                )
            )
    finally:
        if not ray.is_initialized():
            ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
