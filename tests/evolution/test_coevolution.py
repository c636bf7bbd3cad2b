"""Evolution in multi-agent worlds: games drawn into an arena population, folded back to
each member's episodes; opponents from the population and its hall of fame; the same
generations on every schedule and after a resume."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from neuroplug.api import EvaluationRequest, EvaluationResult  # noqa: E402
from neuroplug.app import run_job  # noqa: E402
from neuroplug.config.schema import SelfPlayConfig  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.evolution.coevolution import Arena  # noqa: E402
from neuroplug.opponents.pool import LIVE  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402
from neuroplug.testing import check_resume_is_exact  # noqa: E402
from neuroplug.testing.resume_check import same  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402

DUEL = SimpleNamespace(agents=("paddle_0", "paddle_1"))
PARAMS = 5


def _arena(env=DUEL, **settings) -> Arena:
    config = SelfPlayConfig(enabled=True, **settings) if settings.get("enabled", True) else None
    return Arena(config, env, seed=3, num_params=PARAMS)


def _population(size: int) -> Population:
    return Population.dense(torch.arange(size * PARAMS, dtype=torch.float32).reshape(size, -1))


def _arena_members(staged, population: Population, hall: torch.Tensor | None = None):
    """Which member (or ``P + entry``) each arena member is, read off its parameters."""
    known = population.materialize()
    if hall is not None:
        known = torch.cat([known, hall])
    built = staged.population.materialize()
    return [int(torch.nonzero((known == row).all(1))[0]) for row in built]


def test_games_between_members_count_for_both_and_every_member_plays_its_episodes():
    population, episodes = _population(6), 3
    arena = _arena(latest_share=1.0, pool_size=2)
    staged = arena.stage(population, EvaluationRequest(generation=0, episodes_per_member=episodes))
    assert staged.request.episodes_per_member == 1
    assert len(staged.population) == 6 * episodes  # 9 games of two members
    assert (staged.counted.sum(-1) == 1).all()  # one paddle each, every episode
    seated = np.asarray(_arena_members(staged, population)).reshape(-1, 2)
    for member in range(6):
        for episode in range(episodes):
            world = staged.world[member, episode]
            assert seated[world][staged.counted[member, episode]] == member
            assert (seated[world] != member).any()  # against another member
    assert (staged.opponent == LIVE).all()


def test_a_hall_of_fame_entry_plays_with_its_snapshot_parameters_and_only_the_member_counts():
    population, arena = _population(5), _arena(latest_share=0.0, pool_size=2)
    snapshot = torch.full((PARAMS,), -7.0)
    arena.end_generation(0, lambda: snapshot)
    staged = arena.stage(population, EvaluationRequest(generation=1, episodes_per_member=2))
    assert len(staged.population) == 5 * 2 * 2  # a world per member and episode
    seated = np.asarray(_arena_members(staged, population, snapshot[None])).reshape(-1, 2)
    for member in range(5):
        for episode in range(2):
            world = staged.world[member, episode]
            mine = staged.counted[member, episode]
            assert seated[world][mine] == member and seated[world][~mine] == 5  # the entry
    assert (staged.opponent != LIVE).all()


def test_a_team_takes_its_agents_in_every_game():
    arena = _arena(latest_share=1.0, pool_size=1, learner_agents=["paddle_1"])
    staged = arena.stage(_population(4), EvaluationRequest(generation=0, episodes_per_member=4))
    first = staged.rated  # the first member of each game: the team's agents
    assert (first == [False, True]).all()


def test_fold_scores_each_member_by_its_agents_and_rates_the_games_against_the_hall():
    population, arena = _population(3), _arena(latest_share=0.0, pool_size=1)
    arena.end_generation(0, lambda: torch.zeros(PARAMS))
    staged = arena.stage(population, EvaluationRequest(generation=1, episodes_per_member=2))
    worlds = len(staged.opponent)
    agent_returns = np.arange(worlds * 2, dtype=np.float64)  # the first agent loses each game
    raw = EvaluationResult(
        returns=agent_returns[:, None],
        lengths=np.full((worlds * 2, 1), 4),
        env_steps=worlds * 8,
        frames=worlds * 8,
        forward_passes=worlds * 8,
    )
    arena.start_generation()
    folded = arena.fold(staged, raw)
    assert folded.returns.shape == (3, 2) and folded.env_steps == worlds * 8
    for member in range(3):
        for episode in range(2):
            world, mine = staged.world[member, episode], staged.counted[member, episode]
            assert folded.returns[member, episode] == agent_returns.reshape(-1, 2)[world][mine][0]
    entry = arena.pool.entries[staged.opponent[0]]
    wins = int((staged.rated[:, 1]).sum())  # a member on the second paddle won its game
    assert entry.segment_results["win"] == wins and entry.games == worlds
    assert arena.pool.learner.mu != 25.0  # rated against the entry


def test_without_self_play_a_member_plays_every_agent_of_its_world():
    arena = Arena(None, SimpleNamespace(agents=("agent_0", "agent_1", "agent_2")), 0, PARAMS)
    population = _population(4)
    staged = arena.stage(population, EvaluationRequest(generation=0, episodes_per_member=2))
    seated = np.asarray(_arena_members(staged, population)).reshape(-1, 3)
    assert len(seated) == 8 and (seated == seated[:, :1]).all()
    raw = EvaluationResult(
        returns=np.arange(24, dtype=np.float64)[:, None], lengths=np.ones((24, 1), int),
        env_steps=24, frames=24, forward_passes=24,
    )  # fmt: skip
    folded = arena.fold(staged, raw)
    assert folded.returns[0, 0] == np.arange(24).reshape(8, 3)[staged.world[0, 0]].mean()


def test_a_members_games_are_different_worlds_and_every_members_kth_the_same():
    """A world's seed is its first lane's episode's: a member's game e is numbered as a lone
    member's world e would be (e k), so its two games differ and all members' first
    games start alike (common random numbers)."""
    arena = Arena(None, SimpleNamespace(agents=("agent_0", "agent_1", "agent_2")), 0, PARAMS)
    staged = arena.stage(_population(4), EvaluationRequest(generation=0, episodes_per_member=2))
    first_lane = staged.request.episodes.reshape(-1, 3)[:, 0]
    for member in range(4):
        games = first_lane[staged.world[member]]
        assert games.tolist() == [0, 3]  # game 0 in world 0's seed, game 1 in world 1's


def test_the_draws_are_the_runs_own():
    population = _population(6)
    request = EvaluationRequest(generation=2, episodes_per_member=2)
    one, two = (_arena(latest_share=0.5, pool_size=1) for _ in range(2))
    for arena in (one, two):
        arena.end_generation(0, lambda: torch.ones(PARAMS))
    left, right = one.stage(population, request), two.stage(population, request)
    assert np.array_equal(left.counted, right.counted) and np.array_equal(left.world, right.world)
    other = one.stage(population, EvaluationRequest(generation=3, episodes_per_member=2))
    assert not np.array_equal(left.counted, other.counted) or not np.array_equal(
        left.opponent, other.opponent
    )


GA_DUEL = [
    "algo=ga", "env=pong_duel", "env.kwargs.points=1", "env.max_episode_steps=60",
    "net.hidden_sizes=[8]", "algo.population_size=8", "selfplay=pool", "selfplay.pool_size=2",
    "run.eval_episodes=2",
]  # fmt: skip


def test_every_schedule_plays_the_same_generations(compose, tmp_path):
    quiet = [*GA_DUEL, "run.max_generations=3", "logger=none"]
    states = {}
    for name, schedule in (
        ("serial", ["scheduler=serial"]),
        ("threaded", ["scheduler=threaded"]),
        ("pipelined", ["scheduler=pipelined", "scheduler.groups=2"]),
    ):
        run_job(compose([*quiet, *schedule, f"run.output_dir={tmp_path / name}"]))
        states[name] = load_checkpoint(tmp_path / name)
    for name in ("threaded", "pipelined"):
        for key in ("algorithm", "loop", "counters", "last_eval"):
            assert same(states["serial"][key], states[name][key]), (name, key)
    hall = states["serial"]["loop"]["arena"]["entries"]
    assert [entry["name"] for entry in hall] == ["latest", "snapshot@2", "snapshot@3"]
    rows = list(csv.DictReader((tmp_path / "serial" / "tournament.csv").open()))
    assert {row["generation"] for row in rows} == {"1", "2", "3"}
    metrics = list(csv.DictReader((tmp_path / "serial" / "metrics.csv").open()))
    assert float(metrics[-1]["algo/selfplay/games"]) > 0


def test_a_resumed_run_continues_the_hall_of_fame(compose, tmp_path):
    straight, _ = check_resume_is_exact(compose, GA_DUEL, tmp_path)
    assert len(straight["loop"]["arena"]["entries"]) == 3  # the population and two entries


def test_a_cooperative_world_is_one_member_on_every_agent(compose, tmp_path):
    """``simple_spread`` without self-play: each member's episodes are worlds of its own
    three agents, its fitness their mean return."""
    run_job(
        compose(
            ["algo=es", "env=simple_spread", "env.max_episode_steps=10", "net.hidden_sizes=[8]",
             "algo.population_size=4", "run.max_generations=1", "run.eval_episodes=1",
             "logger=none", f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    (row,) = csv.DictReader((tmp_path / "metrics.csv").open())
    assert float(row["env_steps"]) == 4 * 3 * 10  # 4 worlds of 3 agents x 10 steps


def test_an_algorithm_that_learns_from_steps_is_refused_in_a_multi_agent_world(compose):
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.training.components import build_components

    config = compose(
        ["algo=cem_rl", "env=simple_spread", "env.kwargs.continuous_actions=true", "logger=none"]
    )
    with pytest.raises(ConfigError, match="algo") as refused:
        build_components(typed_experiment(config))
    assert "steps" in str(refused.value)
