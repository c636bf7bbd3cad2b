"""algo=sep_cma_es against pycma's diagonal CMA-ES (`CMA_diagonal`), run here with the same
seeds in 10 dimensions; and its compact populations.

Factors (2026-11-27, pycma 4.5.0, seeds 0-2, median evaluations to 1e-8): sphere 0.94,
axis-aligned ellipsoid (condition 1e6) 1.01. The tests allow 1.25. A diagonal cannot learn
a rotated ellipsoid (neither ours nor pycma's reaches 1e-8 in 100k evaluations).
"""

from __future__ import annotations

import pytest
import torch
from neuroplug_algorithms.sep_cma_es import SepCMAES
from neuroplug_algorithms.sep_cma_es_config import SepCMAESConfig
from strategy_reference import SEEDS, median_evaluations, ours, pycma

from neuroplug.testing.synthetic import ellipsoid, sphere, synthetic_context, synthetic_result

FACTOR = 1.25
TARGET = 1e-8
FUNCTIONS = {"sphere": (sphere, 5000), "ellipsoid": (ellipsoid(10), 10000)}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_sep_cma_es_needs_no_more_evaluations_than_pycmas_diagonal_cma(name):
    cost, budget = FUNCTIONS[name]
    config = SepCMAESConfig(name="sep_cma_es", sigma_init=1.0)
    mine = [ours(SepCMAES, config, cost, TARGET, seed, budget) for seed in SEEDS]
    reference = [pycma(cost, TARGET, seed, budget, 1.0, CMA_diagonal=True) for seed in SEEDS]
    assert median_evaluations(mine, TARGET) <= FACTOR * median_evaluations(reference, TARGET)


def test_a_population_is_the_mean_and_a_std_per_parameter_not_its_members():
    algorithm = SepCMAES(SepCMAESConfig(name="sep_cma_es"), synthetic_context(num_params=50))
    for _ in range(3):  # the std differs per parameter after a few updates
        population = algorithm.ask()
        costs = ellipsoid(50)(population.materialize().double().numpy())
        algorithm.tell(population, synthetic_result(-costs))
    population = algorithm.ask()
    assert population.bases.shape == (1, 50) and population.sigma.shape == (1, 50)
    assert len(torch.unique(population.sigma)) == 50
    expected = (
        algorithm.m.float()
        + algorithm.sigma
        * algorithm.D.float()
        * (population.materialize()[0] - population.bases[0])
        / (population.sigma[0])
    )
    torch.testing.assert_close(population.materialize()[0], expected)


def test_a_restored_state_continues_exactly():
    def run(algorithm, generations):
        for _ in range(generations):
            population = algorithm.ask()
            costs = ellipsoid(8)(population.materialize().double().numpy())
            algorithm.tell(population, synthetic_result(-costs))

    config = SepCMAESConfig(name="sep_cma_es", sigma_init=0.5)
    straight = SepCMAES(config, synthetic_context(num_params=8, seed=2))
    run(straight, 6)
    resumed = SepCMAES(config, synthetic_context(num_params=8, seed=2))
    resumed.load_state_dict(straight.state_dict())
    run(straight, 4)
    run(resumed, 4)
    assert torch.equal(straight.ask().materialize(), resumed.ask().materialize())
