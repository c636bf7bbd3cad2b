"""The torch backend: only alive members are computed, and each as its own network."""

from __future__ import annotations

import pytest
import torch
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.nets.mlp import MLP
from neuroplug.population import Population


def _population(network, size=6):
    centre = network.initial_params(torch.Generator().manual_seed(0))
    return Population(
        bases=centre.unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=torch.full((size,), 0.5),
        seed=torch.arange(size, dtype=torch.int64) + 10,
    )


@pytest.mark.parametrize("budget_mb", [4096, 0])  # materialised once / rebuilt per call
def test_forward_of_alive_members_matches_naive_loop(budget_mb):
    network = MLP(4, [32], 2, "tanh")
    population = _population(network)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=budget_mb), network
    )
    backend.load(population)
    alive = torch.tensor([5, 0, 3])
    inputs = torch.randn(3, 4)
    outputs = backend.forward(alive, inputs)
    members = population.materialize()
    expected = torch.stack(
        [
            network.forward_single(members[m], inputs[j : j + 1])[0]
            for j, m in enumerate(alive.tolist())
        ]
    )
    assert torch.allclose(outputs, expected, atol=1e-5)


def test_forward_before_load_is_an_error():
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), MLP(2, [2], 2, "tanh"))
    with pytest.raises(RuntimeError, match="before load"):
        backend.forward(torch.tensor([0]), torch.zeros(1, 2))


def test_cuda_request_without_gpu_names_the_field():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from neuroplug.errors import ConfigError

    with pytest.raises(ConfigError, match="backend.device"):
        TorchBackend(TorchBackendConfig(name="torch", device="cuda"), MLP(2, [2], 2, "tanh"))


def test_any_subset_of_members_gives_the_rows_of_the_full_forward():
    """Runs, sparse subsets, unsorted and repeated members: every path agrees bit for bit."""
    network = MLP(4, [8], 2, "tanh")
    population = Population(
        bases=network.initial_params(torch.Generator().manual_seed(0)).unsqueeze(0),
        base_index=torch.zeros(12, dtype=torch.int64),
        scale=torch.full((12,), 0.1),
        seed=torch.arange(12),
    )
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    observations = torch.randn(12, 4)
    full = backend.forward(torch.arange(12), observations)
    for members in ([3, 4, 5], [5, 3, 4], [2, 4, 5, 7], [7, 2, 2, 5], [0, 11], [6, 6]):
        members = torch.tensor(members)
        inputs = torch.randn(len(members), 4)
        expected = network.forward_population(population.materialize(members), inputs)
        assert torch.equal(backend.forward(members, inputs), expected), members
        assert torch.equal(backend.forward(members, observations[members]), full[members])


@pytest.mark.parametrize("bases", [1, 2])
def test_lowrank_populations_run_factored_and_match_their_materialised_members(bases):
    from neuroplug.lowrank import lowrank_for

    network = MLP(5, [24, 20], 3, "tanh")
    lowrank = lowrank_for(network.layout, rank=2, min_size=400)
    assert [matrix.offset for matrix in lowrank.matrices] == [network.layout.slots["w1"].offset]
    generator = torch.Generator().manual_seed(1)
    population = Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(bases)]),
        base_index=torch.arange(10) % bases,
        scale=torch.tensor([0.0, 0.5, -0.5, 0.5, -0.5, 0.2, -0.2, 1.0, -1.0, 0.3]),
        seed=torch.tensor([0, 1, 1, 2, 2, 3, 3, 4, 4, 5]),
        lowrank=lowrank,
    )
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    assert backend._factored is not None
    observations = torch.randn(10, 5)
    full = backend.forward(torch.arange(10), observations)
    for members in ([0, 1, 2], [9, 3, 3, 7], list(range(10))):
        members = torch.tensor(members)
        inputs = torch.randn(len(members), 5)
        expected = network.forward_population(population.materialize(members), inputs)
        torch.testing.assert_close(backend.forward(members, inputs), expected)
        # A member's outputs do not depend on who else is in the batch.
        assert torch.equal(backend.forward(members, observations[members]), full[members])


def _sigma_population(network, size=6):
    generator = torch.Generator().manual_seed(2)
    return Population(
        bases=torch.randn(2, network.num_params, generator=generator),
        base_index=torch.arange(size, dtype=torch.int64) % 2,
        scale=torch.ones(size),
        seed=torch.arange(size, dtype=torch.int64) + 20,
        sigma=torch.rand(2, network.num_params, generator=generator),
    )


def _fresh_population(network, size=6):
    from neuroplug.nets.network import SeededInitializer

    seeds = torch.arange(size, dtype=torch.int64) + 30
    return Population.fresh(seeds, SeededInitializer(network), network.num_params)


@pytest.mark.parametrize("budget_mb", [4096, 0])
@pytest.mark.parametrize("build", [_sigma_population, _fresh_population])
def test_every_member_form_runs_exactly_as_materialize_builds_it(build, budget_mb):
    network = MLP(4, [16], 2, "tanh")
    population = build(network)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=budget_mb), network
    )
    backend.load(population)
    alive = torch.tensor([4, 1, 2])
    inputs = torch.randn(3, 4)
    params = population.materialize(alive)
    expected = network.forward_population(params, inputs)
    assert torch.equal(backend.forward(alive, inputs), expected)
