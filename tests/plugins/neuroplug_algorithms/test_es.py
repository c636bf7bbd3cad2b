"""OpenAI ES: mirrored populations, a gradient rebuilt from seeds, and learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_algorithms.es import ESConfig, OpenAIES

from neuroplug.errors import ConfigError
from neuroplug.evolution.shaping import centered_ranks
from neuroplug.population.noise import noise_vectors
from neuroplug.testing import synthetic_context, synthetic_result


def test_mirrored_population_pairs_share_seeds_with_opposite_scales():
    es = OpenAIES(
        ESConfig(population_size=6, sigma=0.1), synthetic_context(initial_params=torch.zeros(10))
    )
    population = es.ask()
    assert len(population) == 6
    assert torch.equal(population.seed[0::2], population.seed[1::2])
    assert torch.allclose(population.scale, torch.tensor([0.1, -0.1] * 3))
    members = population.materialize()
    assert torch.allclose(members[0], -members[1])


def test_update_equals_the_estimate_from_stored_noise():
    """The update regenerates eps from seeds; it must equal the textbook estimate."""
    config = ESConfig(population_size=8, sigma=0.05, learning_rate=0.01, l2_coeff=0.0)
    es = OpenAIES(config, synthetic_context(initial_params=torch.zeros(20), seed=1))
    population = es.ask()
    fitness = np.random.default_rng(0).normal(size=8)
    eps = noise_vectors(population.seed[0::2], 20)
    ranks = centered_ranks(fitness)
    expected_gradient = torch.from_numpy(ranks[0::2] - ranks[1::2]).float() @ eps / 8
    es.tell(population, synthetic_result(fitness))
    # Adam's first step moves every coordinate by lr * sign(gradient).
    assert torch.allclose(es.center, 0.01 * torch.sign(expected_gradient), atol=1e-6)


def test_sgd_steps_along_the_estimate_and_checkpoints_the_center_alone():
    """``algo.optimizer=sgd``: theta + lr (g - l2 theta), the fine-tuning papers' update,
    with no optimizer state: the checkpoint is one model."""
    config = ESConfig(
        population_size=8, sigma=0.05, learning_rate=0.3, l2_coeff=0.1, optimizer="sgd"
    )
    start = torch.linspace(-1, 1, 20)
    es = OpenAIES(config, synthetic_context(initial_params=start, seed=2))
    population = es.ask()
    fitness = np.random.default_rng(1).normal(size=8)
    ranks = centered_ranks(fitness)
    eps = noise_vectors(population.seed[0::2], 20)
    gradient = torch.from_numpy(ranks[0::2] - ranks[1::2]).float() @ eps / 8
    es.tell(population, synthetic_result(fitness))
    torch.testing.assert_close(es.center, start + 0.3 * (gradient - 0.1 * start))
    state = es.state_dict()
    assert _numbers_held(state["algorithm"]) == 20  # the center's, nothing more
    resumed = OpenAIES(config, synthetic_context(initial_params=torch.zeros(20), seed=2))
    resumed.load_state_dict(state)
    torch.testing.assert_close(resumed.center, es.center)


def _numbers_held(state) -> int:
    if isinstance(state, torch.Tensor):
        return state.numel()
    if isinstance(state, dict):
        return sum(_numbers_held(value) for value in state.values())
    return 0


def test_es_climbs_a_smooth_objective():
    target = torch.linspace(-1, 1, 30)
    es = OpenAIES(
        ESConfig(population_size=20, sigma=0.1, learning_rate=0.05, l2_coeff=0.0),
        synthetic_context(initial_params=torch.zeros(30)),
    )
    start = float((es.center - target).norm())
    for _ in range(150):
        population = es.ask()
        fitness = -((population.materialize() - target) ** 2).sum(dim=1).numpy()
        es.tell(population, synthetic_result(fitness))
    assert float((es.center - target).norm()) < 0.2 * start


def test_nan_fitness_is_scored_worst_and_the_center_stays_finite():
    es = OpenAIES(ESConfig(population_size=4), synthetic_context(initial_params=torch.zeros(5)))
    population = es.ask()
    stats = es.tell(population, synthetic_result(np.array([1.0, np.nan, np.inf, 0.0])))
    assert torch.isfinite(es.center).all()
    assert stats["nonfinite_fitness"] == 2


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"population_size": 1}, "algo.population_size"),
        ({"population_size": 7}, "algo.population_size"),
        ({"sigma": 0.0}, "algo.sigma"),
        ({"sigma": -0.1}, "algo.sigma"),
        ({"learning_rate": 0.0}, "algo.learning_rate"),
        ({"fitness_shaping": "softmax"}, "algo.fitness_shaping"),
        ({"optimizer": "rmsprop"}, "algo.optimizer"),
        ({"episodes_per_member": 0}, "algo.episodes_per_member"),
    ],
)
def test_invalid_settings_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        ESConfig(**kwargs)


def test_odd_population_is_fine_without_mirroring():
    es = OpenAIES(
        ESConfig(population_size=7, mirrored=False),
        synthetic_context(initial_params=torch.zeros(3)),
    )
    assert len(es.ask()) == 7


@pytest.mark.parametrize(
    "settings, field, said",
    [
        ({"lowrank_min_size": 100_000}, "algo.lowrank_min_size", r"its largest, 4 x 8, has 32"),
        ({"rank": 9, "lowrank_min_size": 16}, "algo.rank", r"algo.rank of at most 2"),
    ],
)
def test_a_low_rank_run_with_no_matrix_to_factor_is_refused_naming_the_setting(
    settings, field, said
):
    from neuroplug.nets.mlp import MLP

    network = MLP(4, [8], 2, "tanh")
    config = ESConfig(population_size=6, perturbation="lowrank", **settings)
    context = synthetic_context(initial_params=torch.zeros(network.num_params), network=network)
    with pytest.raises(ConfigError, match=said) as refused:
        OpenAIES(config, context)
    assert refused.value.field == field


def test_a_low_rank_run_of_a_network_without_matrices_is_refused_naming_the_perturbation():
    from neuroplug.nets.module_network import ModuleNetwork

    class NormOnly(torch.nn.Module):
        def __init__(self, observation_shape, outputs):
            super().__init__()
            self.norm = torch.nn.LayerNorm(outputs)

        def forward(self, observations):
            return self.norm(observations)

    network = ModuleNetwork(NormOnly, (4,), 4)
    config = ESConfig(population_size=6, perturbation="lowrank")
    context = synthetic_context(initial_params=torch.zeros(network.num_params), network=network)
    with pytest.raises(ConfigError, match="lowrank perturbs weight matrices, and .* has none"):
        OpenAIES(config, context)
