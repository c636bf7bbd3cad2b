"""The games of a population per policy: each policy's members on its own agents, against
the other policies' members (all counting) or their halls of fame (only the member
counting, the outcome going to the hall); the halls in metrics, the table and the
checkpoint, on every schedule."""

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
from neuroplug.evolution.policy_arena import PolicyArena  # noqa: E402
from neuroplug.opponents.pool import LIVE  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402
from neuroplug.testing import check_resume_is_exact  # noqa: E402
from neuroplug.testing.resume_check import same  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402

TAG = SimpleNamespace(agents=("adversary_0", "adversary_1", "agent_0"), policy_mapping="per_team")
TEAM = {0: [True, True, False], 1: [False, False, True]}
PARAMS = 4


def _arena(owners: np.ndarray, **settings) -> PolicyArena:
    config = SelfPlayConfig(enabled=True, **settings) if settings else None
    return PolicyArena(config, TAG, seed=1, num_params=PARAMS, member_policies=lambda: owners)


def _population(size: int) -> Population:
    return Population.dense(torch.arange(size * PARAMS, dtype=torch.float32).view(size, -1))


def _seated(staged, known: torch.Tensor) -> np.ndarray:
    """``(worlds, k)``: the row of ``known`` seated on each agent of each world."""
    built = staged.population.materialize()
    seated = [int(torch.nonzero((known == row).all(1))[0]) for row in built]
    return np.asarray(seated).reshape(-1, len(TAG.agents))


@pytest.mark.parametrize("sizes", [(4, 4), (5, 3)])
def test_each_policys_members_play_its_agents_against_the_other_policys(sizes):
    size = sum(sizes)
    population, owners, episodes = _population(size), np.repeat([0, 1], sizes), 3
    staged = _arena(owners).stage(population, EvaluationRequest(0, episodes_per_member=episodes))
    seated = _seated(staged, population.materialize())
    assert len(seated) == episodes * max(sizes)  # a world per member of the larger policy
    assert (owners[seated[:, :2]] == 0).all() and (owners[seated[:, 2]] == 1).all()
    assert (seated[:, 0] == seated[:, 1]).all()  # one member plays its whole team
    for member in range(size):
        for episode in range(episodes):
            world = staged.world[member, episode]
            mine = staged.counted[member, episode]
            assert mine.tolist() == TEAM[owners[member]]
            assert (seated[world][mine] == member).all()
    assert staged.counted.any(-1).sum() == size * episodes  # extra seats do not count
    opponents = {(seated[w, 0], seated[w, 2]) for w in range(len(seated))}
    assert len(opponents) > max(sizes)  # shuffled: members meet different opponents
    assert (staged.halls == LIVE).all()


def test_against_the_halls_only_the_member_counts_and_the_outcome_goes_to_the_hall():
    population, owners = _population(6), np.repeat([0, 1], [4, 2])
    arena = _arena(owners, latest_share=0.0, pool_size=2)
    snapshots = torch.stack([torch.full((PARAMS,), -1.0), torch.full((PARAMS,), -2.0)])
    arena.end_generation(0, lambda: snapshots)  # each policy's deployed joins its hall
    staged = arena.stage(population, EvaluationRequest(1, episodes_per_member=2))
    known = torch.cat([population.materialize(), snapshots])  # rows 6, 7: the halls' entries
    seated = _seated(staged, known)
    assert len(seated) == 6 * 2  # a game of its own per member and episode
    for member in range(6):
        for episode in range(2):
            world = staged.world[member, episode]
            mine = staged.counted[member, episode]
            assert mine.tolist() == TEAM[owners[member]]
            other_hall = 7 if owners[member] == 0 else 6  # the other policy's snapshot
            assert (seated[world][mine] == member).all()
            assert (seated[world][~mine] == other_hall).all()
            assert staged.halls[world][owners[member]] == LIVE
            assert staged.halls[world][1 - owners[member]] != LIVE
    # The adversaries win every game: the agent's hall loses 8, the adversaries' wins 4.
    returns = np.tile([1.0, 1.0, -1.0], len(seated))[:, None]
    result = EvaluationResult(returns, np.ones_like(returns, dtype=np.int64), 0, 0, 0)
    folded = arena.fold(staged, result)
    assert folded.returns.shape == (6, 2)
    assert (folded.returns[:4] == 1.0).all() and (folded.returns[4:] == -1.0).all()
    stats, rows = arena.end_generation(1, lambda: snapshots)
    assert stats["selfplay/agent_hall/win_rate"] == 1.0  # the adversaries against it
    assert stats["selfplay/adversary_hall/win_rate"] == 0.0  # the agent against it
    assert stats["selfplay/agent_hall/games"] == 8.0
    assert {row["hall"] for row in rows} == {"adversary", "agent"}


def test_halls_that_together_would_not_fit_in_memory_are_refused_naming_the_pool_size():
    from neuroplug.errors import ConfigError
    from neuroplug.runtime.devices import available_memory_bytes

    available = available_memory_bytes()
    if available is None:
        pytest.skip("this system does not say how much memory is available")
    params = 10**6  # 4 MB a snapshot
    pool_size = int(0.5 * available / (params * 4))  # one hall fits in 0.8 of it, two do not
    config = SelfPlayConfig(enabled=True, pool_size=pool_size)
    with pytest.raises(ConfigError, match="selfplay.pool_size: .*each of 2 populations"):
        PolicyArena(config, TAG, seed=1, num_params=params, member_policies=lambda: None)


def test_a_member_plays_live_while_the_other_hall_is_empty():
    population, owners = _population(4), np.repeat([0, 1], [2, 2])
    arena = _arena(owners, latest_share=0.0, pool_size=2)
    staged = arena.stage(population, EvaluationRequest(0, episodes_per_member=2))
    assert (staged.halls == LIVE).all() and len(staged.halls) == 2 * 2


GA_DUEL = [
    "algo=ga", "env=pong_duel", "env.policy_mapping=per_agent", "env.kwargs.points=1",
    "env.max_episode_steps=60", "net.hidden_sizes=[8]", "algo.population_size=6",
    "selfplay=pool", "selfplay.pool_size=2", "run.eval_episodes=2",
]  # fmt: skip


def test_every_schedule_plays_the_same_games_against_the_halls(compose, tmp_path):
    quiet = [*GA_DUEL, "run.max_generations=3", "logger=none"]
    states = {}
    for name, schedule in (
        ("serial", ["scheduler=serial"]),
        ("pipelined", ["scheduler=pipelined", "scheduler.groups=2"]),
    ):
        run_job(compose([*quiet, *schedule, f"run.output_dir={tmp_path / name}"]))
        states[name] = load_checkpoint(tmp_path / name)
    for key in ("algorithm", "loop", "counters", "last_eval"):
        assert same(states["serial"][key], states["pipelined"][key]), key
    halls = states["serial"]["loop"]["arena"]["halls"]
    assert [[entry["name"] for entry in hall["entries"]] for hall in halls] == [
        ["latest", "snapshot@2", "snapshot@3"]
    ] * 2
    rows = list(csv.DictReader((tmp_path / "serial" / "tournament.csv").open()))
    assert {row["hall"] for row in rows} == {"paddle_0", "paddle_1"}
    metrics = list(csv.DictReader((tmp_path / "serial" / "metrics.csv").open()))
    assert float(metrics[-1]["algo/selfplay/paddle_1_hall/games"]) > 0


def test_a_resumed_run_continues_every_hall(compose, tmp_path):
    straight, _ = check_resume_is_exact(compose, GA_DUEL, tmp_path)
    assert len(straight["loop"]["arena"]["halls"]) == 2


def test_each_populations_policy_is_evaluated_against_a_bot_on_its_own_seat(compose, tmp_path):
    from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
    from neuroplug.tools.match import match

    bot = "neuroplug.envs.multi_agent.games.pong_duel:tracking_bot"
    run_job(
        compose(
            [*GA_DUEL, "run.max_generations=2", "logger=none", f"selfplay.eval_opponent={bot}",
             "run.eval_episodes=4", f"run.output_dir={tmp_path}"]
        )
    )  # fmt: skip
    row = list(csv.DictReader((tmp_path / "metrics.csv").open()))[-1]
    for paddle in ("paddle_0", "paddle_1"):
        # The same games as a match of that paddle's policy on its seat, at the eval's seeds.
        played = match(tmp_path, bot, games=4, seed=EVALUATION_GENERATION_OFFSET + 2, policy=paddle)
        assert float(row[f"eval/{paddle}/win_rate"]) == played.score_rate
