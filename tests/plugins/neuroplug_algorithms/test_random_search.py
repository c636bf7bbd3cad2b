"""Random search: fresh populations, the best member ever deployed, a seed-sized checkpoint."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from neuroplug_algorithms.random_search import RandomSearch, RandomSearchConfig

from neuroplug.errors import ConfigError
from neuroplug.testing import check_resume_is_exact, synthetic_context, synthetic_result

NUM_PARAMS = 7


def _initializer(seed: int) -> torch.Tensor:
    """A tiny stand-in for a network's initialiser."""
    return torch.randn(NUM_PARAMS, generator=torch.Generator().manual_seed(seed))


def _rs(seed: int = 0, population_size: int = 6) -> RandomSearch:
    config = RandomSearchConfig(population_size=population_size)
    context = synthetic_context(
        seed=seed, initializer=_initializer, initial_params=torch.zeros(NUM_PARAMS)
    )
    return RandomSearch(config, context)


def test_every_member_is_fresh_from_the_initializer_every_generation():
    rs, twin = _rs(), _rs()
    for _ in range(2):
        population = rs.ask()
        expected = torch.stack([_initializer(seed) for seed in twin.draw_seeds(6).tolist()])
        assert len(population) == 6
        assert torch.equal(population.scale, torch.zeros(6))
        assert torch.equal(population.materialize(), expected)
        rs.tell(population, synthetic_result(np.zeros(6)))


def test_the_best_member_ever_is_deployed():
    rs = _rs()
    first = rs.ask()
    stats = rs.tell(first, synthetic_result([0.0, 1.0, 5.0, 2.0, 0.0, 0.0]))
    assert stats["new_best"] == 1.0
    assert torch.equal(rs.policy_params(), first.materialize(torch.tensor([2]))[0])
    # A worse generation, then one that only ties: the first best stays deployed.
    for fitness in ([4.0, 0.0, 0.0, 0.0, 0.0, 0.0], [5.0, 0.0, 0.0, 0.0, 0.0, 0.0]):
        stats = rs.tell(rs.ask(), synthetic_result(fitness))
        assert stats["new_best"] == 0.0
        assert torch.equal(rs.policy_params(), first.materialize(torch.tensor([2]))[0])
    better = rs.ask()
    rs.tell(better, synthetic_result([0.0, 0.0, 0.0, 0.0, 0.0, 6.0]))
    assert torch.equal(rs.policy_params(), better.materialize(torch.tensor([5]))[0])
    assert rs.best_fitness == 6.0
    assert rs.generation == 4


def test_state_is_the_best_seed_and_a_resumed_search_continues_identically():
    rs = _rs()
    for generation in range(3):
        rs.tell(rs.ask(), synthetic_result(np.arange(6.0) + generation))
    state = rs.state_dict()
    assert "best_params" not in state
    assert isinstance(state["algorithm"]["best_seed"], int)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    resumed = _rs(seed=99)
    resumed.load_state_dict(torch.load(buffer, weights_only=False))
    assert torch.equal(resumed.policy_params(), rs.policy_params())
    assert resumed.best_fitness == rs.best_fitness == 7.0
    for _ in range(2):
        original, again = rs.ask(), resumed.ask()
        assert torch.equal(original.materialize(), again.materialize())
        fitness = np.array([0.0, 0.0, 9.0, 0.0, 0.0, 0.0])
        rs.tell(original, synthetic_result(fitness))
        resumed.tell(again, synthetic_result(fitness))
    assert torch.equal(resumed.policy_params(), rs.policy_params())
    assert resumed.state_dict()["algorithm"] == rs.state_dict()["algorithm"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"population_size": 1}, "algo.population_size"),
        ({"episodes_per_member": 0}, "algo.episodes_per_member"),
        ({"action_noise": -1.0}, "algo.action_noise"),
    ],
)
def test_invalid_settings_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        RandomSearchConfig(**kwargs)


def test_cartpole_run_resumes_to_the_uninterrupted_best(compose, tmp_path):
    overrides = [
        "algo=rs",
        "env=cartpole",
        "net.hidden_sizes=[16]",
        "algo.population_size=16",
        "run.eval_episodes=2",
    ]
    check_resume_is_exact(compose, overrides, tmp_path, generations=3, stop_at=1)
