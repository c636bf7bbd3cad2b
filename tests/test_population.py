"""Population: members are bases[b] + scale * eps(seed)."""

from __future__ import annotations

import pytest
import torch

from neuroplug.noise import noise_vectors
from neuroplug.population import Population


def _population() -> Population:
    bases = torch.randn(2, 50)
    return Population(
        bases=bases,
        base_index=torch.tensor([0, 1, 0, 1]),
        scale=torch.tensor([0.1, -0.1, 0.0, 2.0]),
        seed=torch.tensor([5, 5, 9, 11]),
    )


def test_materialize_builds_base_plus_scaled_noise():
    population = _population()
    members = population.materialize()
    eps = noise_vectors(population.seed, 50)
    expected = population.bases[population.base_index] + population.scale.unsqueeze(1) * eps
    assert torch.allclose(members, expected)
    assert torch.equal(members[2], population.bases[0])


def test_materialize_a_subset_matches_the_full_rows():
    population = _population()
    assert torch.equal(
        population.materialize(torch.tensor([3, 1])), population.materialize()[[3, 1]]
    )


def test_dense_population_holds_its_members_verbatim():
    members = torch.randn(3, 7)
    assert torch.equal(Population.dense(members).materialize(), members)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("base_index", {"base_index": torch.tensor([0, 2])}),
        ("seeds", {"seed": torch.tensor([-1, 0])}),
        ("one entry per member", {"scale": torch.tensor([0.1])}),
    ],
)
def test_invalid_populations_are_rejected(field, kwargs):
    values = {
        "bases": torch.zeros(2, 3),
        "base_index": torch.tensor([0, 1]),
        "scale": torch.zeros(2),
        "seed": torch.zeros(2, dtype=torch.int64),
    }
    values.update(kwargs)
    with pytest.raises(ValueError, match=field):
        Population(**values)
