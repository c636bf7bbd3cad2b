"""A population per policy of a multi-agent world: each policy told its own members' games,
generations kept in step, the deployed policy every policy's; the same generations after a
resume (the games themselves, on every schedule: test_policy_arena.py)."""

from __future__ import annotations

import csv
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

from neuroplug.api import (  # noqa: E402
    Algorithm,
    AlgorithmConfig,
    AlgorithmContext,
    EvaluationResult,
)
from neuroplug.app import run_job  # noqa: E402
from neuroplug.evolution.policy_populations import PolicyPopulations  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402
from neuroplug.testing import check_resume_is_exact  # noqa: E402
from neuroplug.training.checkpoint import load_checkpoint  # noqa: E402

TAG = SimpleNamespace(agents=("adversary_0", "adversary_1", "agent_0"), policy_mapping="per_team")
PARAMS = 4


class _Rounds(Algorithm):
    """A fake policy algorithm that takes ``rounds`` rounds a generation."""

    def __init__(self, rounds: int, value: float) -> None:
        super().__init__(AlgorithmConfig(population_size=2), None)
        self.rounds, self.value, self.round, self.told = rounds, value, 0, []

    def ask(self) -> Population:
        return Population.dense(torch.full((2, PARAMS), self.value + self.round))

    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        self.told.append(population.materialize()[:, 0].tolist())
        self.round += 1
        if self.round < self.rounds:
            self.continue_generation()
        else:
            self.round, self.generation = 0, self.generation + 1
        return {"fitness": float(result.fitness.mean())}

    def policy_params(self) -> torch.Tensor:
        return torch.full((PARAMS,), -self.value)

    def state_dict(self):
        return {}

    def load_state_dict(self, state) -> None:
        pass


def test_a_policy_whose_generation_ended_waits_with_its_deployed_policy_standing_in():
    built = iter([_Rounds(2, 10.0), _Rounds(1, 20.0)])
    context = AlgorithmContext(None, torch.zeros(PARAMS), 0, lambda seed: torch.zeros(PARAMS), TAG)
    populations = PolicyPopulations(AlgorithmConfig(), context, lambda _: next(built))
    first, second = populations.policies

    def round_of(returns: list[float]) -> dict[str, float]:
        population = populations.ask()
        result = EvaluationResult(np.asarray(returns)[:, None], np.ones((4, 1)), 0, 0, 0)
        return populations.tell(population, result)

    stats = round_of([1.0, 2.0, 3.0, 4.0])
    assert populations.generation == 0 and populations.rounds_requested == 1
    assert stats["policy/adversary/return_mean"] == 1.5 and stats["policy/agent/fitness"] == 3.5
    assert populations.member_policies.tolist() == [0, 0, 1, 1]
    stats = round_of([5.0, 6.0, 7.0])  # the agent's policy waits: one member, its deployed
    assert populations.member_policies.tolist() == [0, 0, 1]
    assert "policy/agent/return_mean" not in stats
    assert populations.generation == 1 and not any(populations.waiting)
    assert first.told == [[10.0, 10.0], [11.0, 11.0]] and second.told == [[20.0, 20.0]]
    assert populations.policy_params()[:, 0].tolist() == [-10.0, -20.0]


TAG_RUN = [
    "env=simple_tag", "env.policy_mapping=per_team", "env.max_episode_steps=15",
    "net.hidden_sizes=[8]", "algo.population_size=6", "run.eval_episodes=2",
]  # fmt: skip


def test_each_team_evolves_its_own_population_and_the_run_deploys_both(compose, tmp_path):
    import neuroplug

    run_job(compose(["algo=es", *TAG_RUN, "run.max_generations=2", f"run.output_dir={tmp_path}"]))
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open()))
    assert float(rows[0]["env_steps"]) == 6 * 4 * 15  # 6 worlds of 4 agents: each member once
    for name in ("adversary", "agent"):
        assert np.isfinite(float(rows[-1][f"algo/policy/{name}/return_mean"]))
        assert np.isfinite(float(rows[-1][f"eval/{name}/return_mean"]))
    state = load_checkpoint(tmp_path)["algorithm"]["policies"]
    adversary, agent = (policy["algorithm"]["center"] for policy in state)
    assert not torch.equal(adversary, agent)  # each its own search
    best = torch.load(tmp_path / "checkpoints" / "best_policy.pt", weights_only=True)
    assert torch.equal(best["policy_params"], torch.stack([adversary, agent]))
    observations = torch.randn(5, 18)
    actions = [
        neuroplug.load_policy(tmp_path, policy=name)(observations)
        for name in ("adversary", "agent_0")
    ]
    assert not torch.equal(*actions)  # each agent's policy its own row


GA_DUEL = [
    "algo=ga", "env=pong_duel", "env.policy_mapping=per_agent", "env.kwargs.points=1",
    "env.max_episode_steps=60", "net.hidden_sizes=[8]", "algo.population_size=6",
    "run.eval_episodes=2",
]  # fmt: skip


def test_a_resumed_run_continues_every_population(compose, tmp_path):
    straight, _ = check_resume_is_exact(compose, GA_DUEL, tmp_path, generations=3, stop_at=1)
    assert len(straight["algorithm"]["policies"]) == 2
