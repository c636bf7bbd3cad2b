"""The strategies' update sums ``sum_k w_k eps_k^p`` over members described by seeds: of a
low-rank population, computed from the stacked factors (never a member's matrix), equal
to the sums of the materialised perturbations."""

from __future__ import annotations

import pytest
import torch

from neuroplug.evolution import weighted_noise_sums
from neuroplug.nets.layout import ParameterLayout
from neuroplug.population.lowrank import lowrank_for, perturbation_vectors

LAYOUT = ParameterLayout(
    [("w0", (16, 40)), ("b0", (40,)), ("w1", (40, 30)), ("b1", (30,)), ("w2", (30, 2))]
)


@pytest.mark.parametrize("rank", [1, 3])
def test_factored_sums_are_the_materialised_perturbations_sums(rank):
    lowrank = lowrank_for(LAYOUT, rank, 100)
    assert len(lowrank.matrices) == 2  # w0 and w1; w2 and the biases keep dense noise
    seeds = torch.arange(300) * 7 + 1
    weights = torch.randn(300, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    first, second = weighted_noise_sums(
        seeds, [(weights, 1), (weights.abs(), 2)], LAYOUT.num_params, lowrank, dtype=torch.float64
    )
    eps = perturbation_vectors(seeds, LAYOUT.num_params, lowrank).double()
    torch.testing.assert_close(first, weights @ eps, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(second, weights.abs() @ eps.square(), rtol=1e-5, atol=1e-5)


def test_without_low_rank_the_sums_are_the_dense_noises():
    seeds = torch.arange(70)
    weights = torch.linspace(-1, 1, 70)
    (total,) = weighted_noise_sums(seeds, [(weights, 1)], LAYOUT.num_params)
    expected = weights @ perturbation_vectors(seeds, LAYOUT.num_params)
    torch.testing.assert_close(total, expected, rtol=1e-5, atol=1e-5)
