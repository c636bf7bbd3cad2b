"""``net.type=transformer``: built from its settings (checked before anything is built), a
population of them runs batched as each member alone, and in factored low rank."""

from __future__ import annotations

import pytest
import torch

from neuroplug.errors import ConfigError
from neuroplug.nets.transformer import TransformerNetwork
from neuroplug.nets.transformer_config import TransformerSettings
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population


def test_a_population_of_transformers_runs_as_each_alone():
    network = TransformerNetwork((4,), 2, {"d_model": 16, "heads": 2, "layers": 2})
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(4)])
    inputs = torch.randn(4, 4, generator=generator)
    batched = network.forward_population(params, inputs)
    alone = torch.cat([network.forward_single(params[j], inputs[j : j + 1]) for j in range(4)])
    torch.testing.assert_close(batched, alone, atol=1e-5, rtol=1e-5)
    assert "transformer d16 x 2 layers, 2 heads over 4 tokens" in network.describe()


def test_a_low_rank_population_of_transformers_runs_factored():
    from neuroplug_backends.module_lowrank import FactoredModule, factored_module

    network = TransformerNetwork((4,), 2, {"d_model": 16, "heads": 2, "layers": 1})
    assert factored_module(network)
    generator = torch.Generator().manual_seed(1)
    population = Population(
        bases=network.initial_params(generator).unsqueeze(0),
        base_index=torch.zeros(5, dtype=torch.int64),
        scale=torch.full((5,), 0.05),
        seed=torch.arange(5),
        lowrank=lowrank_for(network.layout, 2, 200),
    )
    members, inputs = torch.arange(5), torch.randn(5, 4, generator=generator)
    got = FactoredModule(network, population, torch.device("cpu")).forward(members, inputs)[0]
    expected = network.forward_population(population.materialize(members), inputs)
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5)


def test_heads_that_do_not_divide_the_width_are_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"net.kwargs.heads.*3 heads do not divide d_model=64"):
        TransformerSettings(heads=3)


def test_a_fresh_transformers_actions_follow_the_observation():
    """An ES population of fresh transformers on CartPole-sized observations: each member's
    action changes with the observation (were each a constant policy, every member of a
    CartPole population would score 9-10, tie, and ES would have nothing to rank: PyTorch's
    default initialisation did that)."""
    network = TransformerNetwork((4,), 2, {})
    generator = torch.Generator().manual_seed(0)
    center = network.initial_params(generator)
    members = center + 0.02 * torch.randn(16, center.numel(), generator=generator)
    observations = 0.05 * torch.randn(16, 256, 4, generator=generator)  # CartPole's starts
    actions = network.forward_members(members, observations).argmax(dim=-1).float()
    share_of_the_first = actions.mean(dim=1)
    changing = ((share_of_the_first > 0.02) & (share_of_the_first < 0.98)).sum()
    assert changing >= 8, f"only {int(changing)} of 16 members act on the observation"
