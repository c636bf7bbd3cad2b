"""Low-rank (EGGROLL) perturbations: the definition, and ES and the torch backend using it."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from neuroplug_algorithms.es import ESConfig, OpenAIES
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.errors import ConfigError
from neuroplug.evolution.context import algorithm_context
from neuroplug.evolution.shaping import centered_ranks
from neuroplug.nets.mlp import MLP
from neuroplug.population.lowrank import LowRank, LowRankMatrix, lowrank_for, perturbation_vectors
from neuroplug.population.noise import noise_vectors
from neuroplug.testing import synthetic_result


def test_a_listed_matrix_moves_by_its_factors_and_the_rest_by_plain_noise():
    rows, cols, rank, offset = 6, 5, 2, 3
    lowrank = LowRank(rank, (LowRankMatrix(offset, rows, cols),))
    seeds = torch.tensor([4, 77])
    directions = perturbation_vectors(seeds, 40, lowrank)
    eps = noise_vectors(seeds, 40)
    for i in range(2):
        a = eps[i, offset : offset + rows * rank].reshape(rows, rank)
        b = eps[i, offset + rows * rank : offset + (rows + cols) * rank].reshape(cols, rank)
        expected = (a @ b.T / math.sqrt(rank)).flatten()
        torch.testing.assert_close(directions[i, offset : offset + rows * cols], expected)
    assert torch.equal(directions[:, :offset], eps[:, :offset])
    assert torch.equal(directions[:, offset + rows * cols :], eps[:, offset + rows * cols :])


def test_only_large_weight_matrices_whose_factors_fit_go_low_rank():
    network = MLP(64, [32], 3, "tanh")  # w0 64x32 (2048), w1 32x3 (96), biases
    chosen = lowrank_for(network.layout, rank=4, min_size=100)
    assert [m.offset for m in chosen.matrices] == [network.layout.slots["w0"].offset]
    # rank 40 needs 40 * (64 + 32) > 2048 noise elements: no gain, so dense noise stays.
    assert lowrank_for(network.layout, rank=40, min_size=100).matrices == ()


def _lowrank_es(population_size=8):
    network = MLP(8, [8], 2, "tanh")
    config = ESConfig(
        population_size=population_size,
        sigma=0.05,
        l2_coeff=0.0,
        perturbation="lowrank",
        rank=2,
        lowrank_min_size=16,
    )
    context = algorithm_context(network, seed=0)
    es = OpenAIES(config, replace(context, seed=3))
    return es, network


def test_lowrank_es_update_follows_the_evaluated_members():
    es, _ = _lowrank_es()
    population = es.ask()
    assert population.lowrank is not None and len(population.lowrank.matrices) == 1  # w0 only
    members = population.materialize()
    directions = (members[0::2] - members[1::2]) / (2 * 0.05)  # what was evaluated
    fitness = np.random.default_rng(1).normal(size=8)
    ranks = centered_ranks(fitness)
    expected = torch.from_numpy(ranks[0::2] - ranks[1::2]).float() @ directions / 8
    start = es.center.clone()
    es.tell(population, synthetic_result(fitness))
    # Adam's first step moves every coordinate by lr * sign(gradient).
    moved = es.center - start
    significant = expected.abs() > 1e-4
    assert torch.allclose(moved[significant], 0.01 * torch.sign(expected[significant]), atol=1e-6)


def test_torch_backend_runs_lowrank_members():
    es, network = _lowrank_es()
    population = es.ask()
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    observations = torch.randn(3, 8)
    alive = torch.tensor([6, 1, 2])
    members = population.materialize()
    expected = torch.stack(
        [
            network.forward_single(members[m], observations[j : j + 1])[0]
            for j, m in enumerate(alive)
        ]
    )
    torch.testing.assert_close(backend.forward(alive, observations), expected)
    base = population.bases[0]
    weight = network.layout.slots["w0"]
    delta = (members[0] - base)[weight.offset : weight.offset + weight.size].reshape(8, 8)
    assert torch.linalg.matrix_rank(delta) == 2


@pytest.mark.parametrize(
    ("field", "value"), [("perturbation", "sparse"), ("rank", 0), ("lowrank_min_size", 0)]
)
def test_bad_lowrank_settings_name_the_field(field, value):
    with pytest.raises(ConfigError, match=f"algo.{field}"):
        ESConfig(**{field: value})


def test_novelty_es_centers_draw_lowrank_populations_too():
    from neuroplug_algorithms.novelty_es import NSES, NSESConfig

    network = MLP(8, [8], 2, "tanh")
    config = NSESConfig(population_size=4, perturbation="lowrank", lowrank_min_size=16)
    nses = NSES(config, algorithm_context(network, seed=0))
    assert all(center.ask().lowrank is not None for center in nses.centers)
