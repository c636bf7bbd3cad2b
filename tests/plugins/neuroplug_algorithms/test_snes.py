"""algo=snes: the natural gradient of a diagonal Gaussian, checked against its formula, and
its evaluations beside pycma's diagonal CMA-ES (run here, same seeds, 10 dimensions).

Factors (2026-11-27, pycma 4.5.0, seeds 0-2, median evaluations to 1e-8): sphere 1.7,
axis-aligned ellipsoid 1.29 (Schaul et al. 2011 present SNES as competitive with
sep-CMA-ES on separable problems, not faster). The tests allow 2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from neuroplug_algorithms.snes import SNES
from neuroplug_algorithms.snes_config import SNESConfig
from strategy_reference import SEEDS, median_evaluations, ours, pycma

from neuroplug.errors import ConfigError
from neuroplug.population.noise import noise_vectors
from neuroplug.testing.synthetic import ellipsoid, sphere, synthetic_context, synthetic_result

FACTOR = 2.0
TARGET = 1e-8
FUNCTIONS = {"sphere": (sphere, 6000), "ellipsoid": (ellipsoid(10), 10000)}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_snes_is_within_a_factor_of_pycmas_diagonal_cma(name):
    cost, budget = FUNCTIONS[name]
    config = SNESConfig(name="snes", sigma_init=1.0)
    mine = [ours(SNES, config, cost, TARGET, seed, budget) for seed in SEEDS]
    reference = [pycma(cost, TARGET, seed, budget, 1.0, CMA_diagonal=True) for seed in SEEDS]
    assert median_evaluations(mine, TARGET) <= FACTOR * median_evaluations(reference, TARGET)


def test_one_update_is_the_papers_natural_gradient_step():
    dimension = 5
    algorithm = SNES(SNESConfig(name="snes", sigma_init=0.3), synthetic_context(dimension))
    mu, sigma = algorithm.mu.clone(), algorithm.sigma.clone()
    population = algorithm.ask()
    fitness = np.array([3.0, -1.0, 7.0, 0.5, 2.0, -4.0, 1.0, 6.0])[: len(population)]
    algorithm.tell(population, synthetic_result(fitness))
    s = noise_vectors(population.seed, dimension).double()
    size = len(population)
    ranks = np.argsort(np.argsort(-fitness))  # 0 for the best
    raw = np.maximum(0, math.log(size / 2 + 1) - np.log(ranks + 1))
    u = torch.from_numpy(raw / raw.sum() - 1 / size)
    eta_sigma = (3 + math.log(dimension)) / (5 * math.sqrt(dimension))
    torch.testing.assert_close(algorithm.mu, mu + sigma * (u @ s))
    torch.testing.assert_close(algorithm.sigma, sigma * torch.exp(eta_sigma / 2 * (u @ (s**2 - 1))))


def test_bad_learning_rates_name_the_field():
    with pytest.raises(ConfigError, match="learning_rate_sigma"):
        SNESConfig(name="snes", learning_rate_sigma=-0.1)
    with pytest.raises(ConfigError, match="learning_rate_mean"):
        SNESConfig(name="snes", learning_rate_mean=0)
