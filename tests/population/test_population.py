"""Population: members are bases[b] + scale * eps(seed)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from neuroplug.population.members import Population
from neuroplug.population.noise import noise_vectors


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


def test_sigma_scales_each_parameter_of_the_noise_per_base():
    bases, sigma = torch.randn(2, 40), torch.rand(2, 40)
    population = Population(
        bases=bases,
        base_index=torch.tensor([1, 0, 1]),
        scale=torch.tensor([1.0, -0.5, 0.0]),
        seed=torch.tensor([3, 4, 5]),
        sigma=sigma,
    )
    eps = noise_vectors(population.seed, 40)
    members = population.materialize()
    assert torch.equal(members[0], bases[1] + 1.0 * (sigma[1] * eps[0]))
    assert torch.equal(members[1], bases[0] + -0.5 * (sigma[0] * eps[1]))
    assert torch.equal(members[2], bases[1])


def test_a_sigma_of_the_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match="sigma must be"):
        Population(
            bases=torch.zeros(1, 5),
            base_index=torch.zeros(2, dtype=torch.int64),
            scale=torch.ones(2),
            seed=torch.zeros(2, dtype=torch.int64),
            sigma=torch.ones(5),
        )


def _draw(seed: int) -> torch.Tensor:
    return torch.randn(9, generator=torch.Generator().manual_seed(seed))


def test_fresh_draws_are_described_by_seeds_and_built_on_demand():
    calls = []

    def counting_draw(seed: int) -> torch.Tensor:
        calls.append(seed)
        return _draw(seed)

    population = Population.fresh(torch.tensor([7, 8, 9]), counting_draw, 9)
    assert calls == []  # nothing is built until a backend asks
    assert len(population) == 3 and population.num_params == 9 and population.num_bases == 3
    expected = torch.stack([_draw(7), _draw(8), _draw(9)])
    assert torch.equal(population.materialize(), expected)
    assert torch.equal(population.materialize(torch.tensor([2, 0])), expected[[2, 0]])
    assert torch.equal(population.base_params(), expected)


def test_subset_keeps_only_the_bases_its_members_use():
    bases = torch.randn(3, 6)
    population = Population(
        bases=bases,
        base_index=torch.tensor([0, 2, 2, 1]),
        scale=torch.tensor([0.1, 0.2, 0.0, 0.3]),
        seed=torch.tensor([1, 2, 3, 4]),
        sigma=torch.rand(3, 6),
    )
    part = population.subset([2, 1])
    assert part.num_bases == 1
    assert torch.equal(part.materialize(), population.materialize(torch.tensor([2, 1])))
    fresh = Population.fresh(torch.tensor([5, 6, 7]), _draw, 9).subset([2, 0])
    assert sorted(fresh.bases.seeds.tolist()) == [5, 7]  # only the draws it uses
    assert torch.equal(fresh.materialize(), torch.stack([_draw(7), _draw(5)]))


def test_joined_populations_are_their_members_one_after_another():
    dense = _population()
    with_sigma = Population(
        bases=torch.randn(1, 50),
        base_index=torch.tensor([0, 0]),
        scale=torch.tensor([0.5, -0.5]),
        seed=torch.tensor([3, 3]),
        sigma=torch.rand(1, 50),
    )
    fresh = Population.fresh(torch.tensor([7, 8]), lambda seed: _draw(seed).repeat(6)[:50], 50)
    joined = Population.joined([dense, with_sigma, fresh])
    assert len(joined) == 8 and joined.num_bases == 2 + 1 + 2
    expected = torch.cat([dense.materialize(), with_sigma.materialize(), fresh.materialize()])
    assert torch.allclose(joined.materialize(), expected)
    draws = Population.joined([Population.fresh(torch.tensor([1]), _draw, 9)] * 2)
    assert draws.bases.seeds.tolist() == [1, 1]  # fresh draws of one initializer stay seeds


def test_populations_that_perturb_differently_are_not_joined_unless_unperturbed():
    from neuroplug.population.lowrank import LowRank, LowRankMatrix

    lowrank = replace(_population(), lowrank=LowRank(1, (LowRankMatrix(0, 5, 10),)))
    with pytest.raises(ValueError, match="low-rank"):
        Population.joined([_population(), lowrank])
    # Unperturbed members (a hall of fame's) join any population.
    frozen = Population.dense(torch.randn(2, 50))
    joined = Population.joined([lowrank, frozen])
    assert joined.lowrank == lowrank.lowrank
    assert torch.equal(joined.materialize(), torch.cat([lowrank.materialize(), frozen.bases]))
