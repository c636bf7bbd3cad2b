"""The deep GA: populations, truncation, the elite round, compact exact checkpoints, learning."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from neuroplug_algorithms.ga import DeepGA, GAConfig

from neuroplug.errors import ConfigError
from neuroplug.population.noise import noise_vectors
from neuroplug.testing import check_resume_is_exact, synthetic_context, synthetic_result

NUM_PARAMS = 13  # odd, so noise blocks end mid-way through a Philox word
TARGET = torch.linspace(-1, 1, NUM_PARAMS)


def _initializer(seed: int) -> torch.Tensor:
    """A tiny stand-in for a network's initialiser: N(0, 0.5^2) per parameter."""
    return 0.5 * torch.randn(NUM_PARAMS, generator=torch.Generator().manual_seed(seed))


def _ga(seed: int = 0, **overrides) -> DeepGA:
    settings = {
        "population_size": 10,
        "truncation": 3,
        "sigma": 0.1,
        "elite_candidates": 2,
        "elite_episodes": 30,
        **overrides,
    }
    context = synthetic_context(
        seed=seed, initializer=_initializer, initial_params=torch.zeros(NUM_PARAMS)
    )
    return DeepGA(GAConfig(**settings), context)


def _closeness(members: torch.Tensor) -> np.ndarray:
    """Fitness -||theta - target||^2: higher is closer to the target."""
    return -((members - TARGET) ** 2).sum(dim=1).numpy()


def _round(ga: DeepGA, objective=_closeness):
    """One ask/evaluate/tell round with a noise-free objective; returns the population."""
    population = ga.ask()
    fitness = objective(population.materialize())
    ga.tell(population, synthetic_result(fitness, ga.episodes_per_member()))
    return population


def _generation(ga: DeepGA, objective=_closeness):
    """Both rounds of a generation; returns the main and the elite-round populations."""
    return _round(ga, objective), _round(ga, objective)


def test_first_generation_is_fresh_from_the_initializer():
    ga, twin = _ga(), _ga()
    population = ga.ask()
    expected = torch.stack([_initializer(seed) for seed in twin.draw_seeds(10).tolist()])
    assert len(population) == 10
    assert torch.equal(population.scale, torch.zeros(10))
    assert torch.equal(population.materialize(), expected)


def test_children_mutate_parents_and_the_elite_is_unmodified():
    ga = _ga()
    _generation(ga)
    population = ga.ask()
    assert len(population) == 10
    assert torch.equal(population.bases, ga.parents)
    assert len(population.bases) == 3
    assert population.scale[0] == 0 and population.base_index[0] == 0
    assert torch.equal(population.scale[1:], torch.full((9,), 0.1))
    assert 0 <= int(population.base_index.min()) and int(population.base_index.max()) < 3
    members = population.materialize()
    assert torch.equal(members[0], ga.policy_params())
    parents = ga.parents[population.base_index[1:]]
    noise = noise_vectors(population.seed[1:], NUM_PARAMS)
    assert torch.allclose(members[1:], parents + 0.1 * noise)


def test_elite_round_re_evaluates_the_top_members_and_then_closes_the_generation():
    ga = _ga(elite_candidates=3)
    main = ga.ask()
    fitness = np.array([0.0, 9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 4.0, 5.0, 6.0])
    ga.tell(main, synthetic_result(fitness))
    assert ga.generation == 0
    assert ga.episodes_per_member() == 30
    candidates = ga.ask()
    assert torch.equal(candidates.materialize(), main.materialize(torch.tensor([1, 3, 5])))
    ga.tell(candidates, synthetic_result([1.0, 3.0, 2.0], episodes=30))
    assert ga.generation == 1
    assert ga.episodes_per_member() == 1
    # The elite is the best re-evaluated candidate (member 3), not the main round's best.
    assert torch.equal(ga.policy_params(), main.materialize(torch.tensor([3]))[0])


def test_the_previous_elite_is_a_candidate_and_keeps_its_place_on_ties():
    ga = _ga(elite_candidates=2)
    _generation(ga)
    elite = ga.policy_params()
    main = ga.ask()
    fitness = np.arange(10.0)  # the elite (member 0) ranks last in the main round
    ga.tell(main, synthetic_result(fitness))
    candidates = ga.ask()
    assert len(candidates) == 3
    assert torch.equal(candidates.materialize()[0], elite)
    ga.tell(candidates, synthetic_result([5.0, 5.0, 4.0], episodes=30))
    assert torch.equal(ga.policy_params(), elite)


def test_truncation_takes_the_elite_and_the_best_others_as_parents():
    ga = _ga(truncation=4, elite_candidates=2)
    main = ga.ask()
    fitness = np.array([3.0, 9.0, 1.0, 8.0, 2.0, 7.0, 0.0, 4.0, 5.0, 6.0])
    ga.tell(main, synthetic_result(fitness))
    ga.tell(ga.ask(), synthetic_result([1.0, 2.0], episodes=30))  # candidate 2 (member 3) wins
    expected = [3, 1, 5, 9]  # the elite, then the top others by main-round fitness
    assert torch.equal(ga.parents, main.materialize(torch.tensor(expected)))
    twin = _ga(truncation=4)
    seeds = twin.draw_seeds(10).tolist()
    assert ga.parent_chains == [[seeds[m]] for m in expected]


def test_checkpointed_state_holds_seed_chains_and_no_weights():
    ga = _ga()
    for _ in range(5):
        _generation(ga)
    state = ga.state_dict()
    assert "best_params" not in state

    def tensors(value):
        if isinstance(value, dict):
            return [t for item in value.values() for t in tensors(item)]
        if isinstance(value, list | tuple):
            return [t for item in value for t in tensors(item)]
        return [value] if isinstance(value, torch.Tensor | np.ndarray) else []

    assert all((t.size if isinstance(t, np.ndarray) else t.numel()) <= 4 for t in tensors(state))
    chains = state["algorithm"]["parent_chains"]
    assert len(chains) == 3
    assert all(isinstance(seed, int) for chain in chains for seed in chain)
    assert all(1 <= len(chain) <= 5 for chain in chains)


def _round_trip(ga: DeepGA) -> DeepGA:
    """A fresh GA loaded from ``ga``'s state after a torch.save/torch.load round trip."""
    buffer = io.BytesIO()
    torch.save(ga.state_dict(), buffer)
    buffer.seek(0)
    resumed = _ga(seed=123)  # a different seed: everything must come from the state
    resumed.load_state_dict(torch.load(buffer, weights_only=False))
    return resumed


def test_a_resumed_ga_continues_bit_identically():
    ga = _ga()
    for _ in range(4):
        _generation(ga)
    resumed = _round_trip(ga)
    assert torch.equal(resumed.parents, ga.parents)
    assert torch.equal(resumed.best_params, ga.best_params)
    assert resumed.best_fitness == ga.best_fitness
    for _ in range(3):
        populations = _generation(ga)
        resumed_populations = _generation(resumed)
        for original, again in zip(populations, resumed_populations, strict=True):
            assert torch.equal(original.seed, again.seed)
            assert torch.equal(original.base_index, again.base_index)
            assert torch.equal(original.materialize(), again.materialize())
    assert ga.generation == resumed.generation == 7
    assert torch.equal(ga.policy_params(), resumed.policy_params())
    assert ga.state_dict()["algorithm"] == resumed.state_dict()["algorithm"]


def test_the_ga_climbs_a_smooth_objective():
    ga = _ga(population_size=32, truncation=5, sigma=0.05, elite_candidates=3, elite_episodes=1)
    first, _ = _generation(ga)
    start = -float(_closeness(first.materialize()).max())
    for _ in range(40):
        _generation(ga)
    final = -float(_closeness(ga.policy_params().unsqueeze(0))[0])
    assert final < 0.1 * start


def test_nan_fitness_is_scored_worst():
    ga = _ga()
    population = ga.ask()
    fitness = np.arange(10.0)
    fitness[9] = np.nan
    stats = ga.tell(population, synthetic_result(fitness))
    assert stats["nonfinite_fitness"] == 1
    assert torch.equal(ga.ask().materialize(), population.materialize(torch.tensor([8, 7])))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"population_size": 1}, "algo.population_size"),
        ({"truncation": 0}, "algo.truncation"),
        ({"population_size": 8, "truncation": 8}, "algo.truncation"),
        ({"sigma": 0.0}, "algo.sigma"),
        ({"sigma": -0.01}, "algo.sigma"),
        ({"elite_candidates": 0}, "algo.elite_candidates"),
        ({"population_size": 8, "truncation": 2, "elite_candidates": 9}, "algo.elite_candidates"),
        ({"elite_episodes": 0}, "algo.elite_episodes"),
        ({"episodes_per_member": 0}, "algo.episodes_per_member"),
    ],
)
def test_invalid_settings_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        GAConfig(**kwargs)


def test_cartpole_run_resumed_midway_ends_in_the_uninterrupted_state(compose, tmp_path):
    """The real CLI path: 4 generations straight == 2, then resumed to 4."""
    overrides = [
        "algo=ga",
        "env=cartpole",
        "net.hidden_sizes=[16]",
        "algo.population_size=16",
        "algo.truncation=4",
        "algo.elite_candidates=3",
        "algo.elite_episodes=3",
        "algo.sigma=0.05",
        "run.eval_interval=2",
        "run.eval_episodes=2",
    ]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path)
    assert "best_params" not in left["algorithm"]  # the best member is kept as seeds


@pytest.mark.parametrize(
    ("size", "parents", "candidates"),
    [(1000, 20, 10), (64, 2, 10), (200, 4, 10), (8, 2, 8), (2, 1, 2)],
)
def test_settings_that_count_members_follow_the_population(size, parents, candidates):
    config = GAConfig(population_size=size)  # every valid size runs with the defaults
    assert (config.num_parents, config.num_candidates) == (parents, candidates)
    assert GAConfig(population_size=size, truncation=1).num_parents == 1  # a setting wins
