"""A ``net.type=module`` population in factored low rank: what materialised members do,
for linear layers, embeddings and LayerNorm over several bases; modules it cannot run
named; a population whose materialised weights would not fit in memory runs."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from attention_nets import Encoder, SelfAttention
from neuroplug_backends.module_lowrank import FactoredModule, factored_module, unsupported_module
from token_net import RowFolder, TokenMixer

from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population

SUPPORT = Path(__file__).resolve().parents[2] / "support"
ATTENTION = {
    "multi-head attention, batch first": SelfAttention,
    "multi-head attention, sequence first": functools.partial(SelfAttention, batch_first=False),
    "transformer encoder layer": Encoder,
}


def _population(network, members: int, rank: int, bases: int = 2, min_size: int = 64):
    generator = torch.Generator().manual_seed(0)
    stacked = torch.stack([network.initial_params(generator) for _ in range(bases)])
    return Population(
        bases=stacked,
        base_index=torch.arange(members) % bases,
        scale=torch.full((members,), 0.05),
        seed=torch.arange(members) + 11,
        lowrank=lowrank_for(network.layout, rank, min_size),
    )


ROWS = {
    "scattered": [3, 0, 8, 5, 5, 1, 7],
    "the whole population in runs": [m for m in range(9) for _ in range(2)],
    "some members in runs": [3, 3, 0, 0, 8, 8, 3, 3],
    "runs of different lengths": [1, 1, 1, 2, 2, 4],
}
"""Rows' members: the shapes a forward is called with (an evaluation's usual one, each
member's episodes side by side, is taken a run at a time)."""


@pytest.mark.parametrize("bases", [1, 2])
@pytest.mark.parametrize("rows", sorted(ROWS))
@pytest.mark.parametrize("rank", [1, 3])
def test_factored_members_act_as_materialised_ones(rank, rows, bases):
    """One base (the whole population in runs: every member's tensors used as stored) and
    two (each base's rows run apart)."""
    network = ModuleNetwork(TokenMixer, (4,), 3)
    population = _population(network, members=9, rank=rank, bases=bases)
    factored = {(matrix.rows, matrix.cols) for matrix in population.lowrank.matrices}
    assert {(10, 32), (32, 32)} <= factored  # the embedding table and a hidden layer
    members = torch.tensor(ROWS[rows])
    observations = torch.randn(len(members), 4, generator=torch.Generator().manual_seed(1))
    got = FactoredModule(network, population, torch.device("cpu")).forward(members, observations)[0]
    expected = network.forward_population(population.materialize(members), observations)
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("rank", [1, 2])
@pytest.mark.parametrize("members", [[5, 0, 3, 3, 1], [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]])
@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_factored_attention_acts_as_materialised(name, members, rank):
    """Multi-head attention's packed projection and output moved by low-rank products,
    and a whole transformer encoder layer (its linear layers, norms and attention), on
    scattered rows and on the whole population in runs."""
    network = ModuleNetwork(ATTENTION[name], (4,), 3, {"width": 16})
    assert factored_module(network)
    population = _population(network, members=6, rank=rank)
    assert (48, 16) in {(matrix.rows, matrix.cols) for matrix in population.lowrank.matrices}
    members = torch.tensor(members)
    observations = torch.randn(len(members), 4, generator=torch.Generator().manual_seed(2))
    got = FactoredModule(network, population, torch.device("cpu")).forward(members, observations)[0]
    expected = network.forward_population(population.materialize(members), observations)
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)


def test_a_recurrent_encoder_carries_its_state_factored():
    from residual_net import RecurrentEncoder

    network = ModuleNetwork(RecurrentEncoder, (4,), 3, {"width": 16}, features=8)
    assert factored_module(network) and network.state_size == 8
    population = _population(network, members=6, rank=2, min_size=64)
    members = torch.tensor([4, 1, 1, 0])
    generator = torch.Generator().manual_seed(3)
    observations, state = (
        torch.randn(4, 4, generator=generator),
        torch.randn(4, 8, generator=generator),
    )
    factored = FactoredModule(network, population, torch.device("cpu"))
    outputs, new_state = factored.forward(members, observations, state)
    expected = network.forward_population_with_state(
        population.materialize(members), observations, state
    )
    torch.testing.assert_close(outputs, expected[0], atol=2e-6, rtol=1e-5)
    torch.testing.assert_close(new_state, expected[1], atol=2e-6, rtol=1e-5)


def test_a_module_with_other_parameters_is_named():
    convolution = ModuleNetwork(_WithConvolution, (4,), 2)
    assert unsupported_module(convolution) == "convolution (Conv1d)"
    assert not factored_module(convolution)
    assert factored_module(ModuleNetwork(TokenMixer, (4,), 2))


def test_a_layer_that_sees_folded_rows_is_refused_naming_it():
    network = ModuleNetwork(RowFolder, (4,), 2)
    population = _population(network, members=4, rank=1, bases=1)
    factored = FactoredModule(network, population, torch.device("cpu"))
    with pytest.raises(RuntimeError, match=r"mix \(Linear\) got a batch of 16 rows for 4 members"):
        factored.forward(torch.arange(4), torch.randn(4, 4))


def test_a_population_too_big_to_materialise_runs_factored(tmp_path):
    """2,048 members of a 2048 x 2048 layer: materialised, 2,048 x 4.2M weights (34 GB);
    factored, the base and rank-1 factors. Run apart, its peak memory measured."""
    script = f"""
import json, resource, sys, torch
sys.path.insert(0, {str(SUPPORT)!r})
from token_net import WideLinear
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population
from neuroplug_backends.module_lowrank import FactoredModule
torch.set_num_threads(1)
network = ModuleNetwork(WideLinear, (8,), 2)
members = 2048
population = Population(
    bases=network.initial_params(torch.Generator().manual_seed(0)).unsqueeze(0),
    base_index=torch.zeros(members, dtype=torch.int64), scale=torch.full((members,), 0.01),
    seed=torch.arange(members), lowrank=lowrank_for(network.layout, 1, 65536),
)
observations = torch.randn(members, 8, generator=torch.Generator().manual_seed(1))
outputs = FactoredModule(network, population, torch.device("cpu")).forward(
    torch.arange(members), observations)[0]
few = torch.tensor([0, 777, 2047])
expected = network.forward_population(population.materialize(few), observations[few])
print(json.dumps({{
    "materialised_gb": members * network.num_params * 4 / 1e9,
    "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    "difference": float((outputs[few] - expected).abs().max()),
}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    print(measured)
    assert measured["materialised_gb"] > 30
    assert measured["peak_gb"] < 3, measured
    assert measured["difference"] < 1e-4


class _WithConvolution(torch.nn.Module):
    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__()
        self.convolution = torch.nn.Conv1d(1, 2, 3)
        self.out = torch.nn.Linear(2 * (observation_shape[0] - 2), outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.out(self.convolution(observations.unsqueeze(1)).flatten(1))


class _NormedOverTwoAxes(torch.nn.Module):
    """``nn.RMSNorm`` over a (4, 8) block: the factored path normalises both axes."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__()
        self.spread = torch.nn.Linear(observation_shape[0], 32)
        self.norm = torch.nn.RMSNorm((4, 8))
        self.out = torch.nn.Linear(32, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        block = self.spread(observations).view(-1, 4, 8)
        return self.out(self.norm(block).flatten(1))


def test_an_rms_norm_over_several_axes_runs_factored_as_materialised():
    network = ModuleNetwork(_NormedOverTwoAxes, (4,), 3)
    assert factored_module(network)
    population = _population(network, members=5, rank=2, min_size=64, bases=1)
    for members in (torch.tensor([4, 0, 2, 2, 1]), torch.arange(5).repeat_interleave(2)):
        observations = torch.randn(len(members), 4, generator=torch.Generator().manual_seed(5))
        factored = FactoredModule(network, population, torch.device("cpu"))
        got = factored.forward(members, observations)[0]
        expected = network.forward_population(population.materialize(members), observations)
        torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)
