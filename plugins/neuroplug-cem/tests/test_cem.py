"""The noisy cross-entropy method: populations, the elite refit, determinism, checkpoints."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from neuroplug.config.typed import to_dataclass
from neuroplug.errors import ConfigError
from neuroplug.population.noise import noise_vectors
from neuroplug.testing import check_algorithm_contract, synthetic_context, synthetic_result
from neuroplug.training.checkpoint import load_data
from omegaconf import OmegaConf

from neuroplug_cem.cem import CrossEntropyMethod
from neuroplug_cem.config import CEMConfig

NUM_PARAMS = 12


def _sphere(members: torch.Tensor) -> np.ndarray:
    """A smooth fitness with its maximum at ``linspace(-1, 1)``."""
    target = torch.linspace(-1, 1, members.shape[1])
    return -((members - target) ** 2).sum(dim=1).numpy()


def _cem(seed: int = 0, **overrides) -> CrossEntropyMethod:
    config = CEMConfig(**{"population_size": 10, **overrides})
    return CrossEntropyMethod(
        config, synthetic_context(initial_params=torch.zeros(NUM_PARAMS), seed=seed)
    )


def _step(cem: CrossEntropyMethod) -> torch.Tensor:
    """One ask/tell on the sphere; returns the members that were asked."""
    population = cem.ask()
    members = population.materialize()
    cem.tell(population, synthetic_result(_sphere(members)))
    return members


def test_ask_gives_population_size_dense_members_around_the_mean():
    cem = _cem(population_size=10, initial_sigma=0.3)
    twin = _cem(population_size=10, initial_sigma=0.3)
    population = cem.ask()
    assert len(population) == 10
    assert population.num_params == NUM_PARAMS
    assert population.materialize().shape == (10, NUM_PARAMS)
    # Same seed, same RNG: the twin draws the seeds the population was built from.
    expected = 0.3 * noise_vectors(twin.draw_seeds(10), NUM_PARAMS)
    assert torch.equal(population.materialize(), expected)


def test_tell_refits_the_gaussian_to_the_elites():
    cem = _cem(population_size=10, elite_fraction=0.3, extra_noise=0.5, noise_decay_generations=0)
    population = cem.ask()
    members = population.materialize()
    fitness = np.arange(10.0)[::-1].copy()  # members 0, 1, 2 are the elites
    stats = cem.tell(population, synthetic_result(fitness))
    elites = members[:3]
    assert torch.allclose(cem.mean, elites.mean(dim=0))
    assert torch.allclose(cem.std, (elites.var(dim=0, correction=0) + 0.25).sqrt())
    assert torch.equal(cem.policy_params(), cem.mean)
    assert stats["elite_return_mean"] == 8.0


def test_extra_noise_falls_linearly_to_zero_then_stays_there():
    cem = _cem(extra_noise=0.4, noise_decay_generations=4)
    noise = []
    for _ in range(6):
        noise.append(cem.extra_noise())
        _step(cem)
    assert noise == pytest.approx([0.4, 0.3, 0.2, 0.1, 0.0, 0.0])
    assert _cem(extra_noise=0.4, noise_decay_generations=0).extra_noise() == 0.4


def test_a_fixed_seed_gives_the_same_run_and_another_seed_does_not():
    first, second, other = _cem(seed=7), _cem(seed=7), _cem(seed=8)
    assert not torch.equal(_step(first), _step(other))
    _step(second)
    for _ in range(3):
        assert torch.equal(_step(first), _step(second))
    assert torch.equal(first.mean, second.mean)
    assert torch.equal(first.std, second.std)


def test_a_restored_state_continues_exactly():
    original = _cem(seed=3)
    for _ in range(2):
        _step(original)
    # Through torch.save and neuroplug's weights-only load, as a checkpoint file carries it.
    buffer = io.BytesIO()
    torch.save(original.state_dict(), buffer)
    buffer.seek(0)
    restored = _cem(seed=99)  # a different seed: everything must come from the state
    restored.load_state_dict(load_data(buffer))
    assert restored.generation == original.generation == 2
    for _ in range(2):
        assert torch.equal(_step(restored), _step(original))
    assert torch.equal(restored.mean, original.mean)
    assert torch.equal(restored.std, original.std)
    assert restored.best_fitness == original.best_fitness


def test_cem_climbs_a_smooth_objective():
    cem = _cem(population_size=32, initial_sigma=0.5, extra_noise=0.05)
    target = torch.linspace(-1, 1, NUM_PARAMS)
    start = float((cem.mean - target).norm())
    for _ in range(40):
        _step(cem)
    assert float((cem.mean - target).norm()) < 0.1 * start


def test_nonfinite_returns_are_never_elites():
    cem = _cem(population_size=4, elite_fraction=0.5)
    population = cem.ask()
    members = population.materialize()
    stats = cem.tell(population, synthetic_result(np.array([np.nan, 1.0, np.inf, 2.0])))
    assert torch.allclose(cem.mean, members[[1, 3]].mean(dim=0))
    assert stats["nonfinite_fitness"] == 2


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"population_size": 1}, "algo.population_size"),
        ({"elite_fraction": 0.0}, "algo.elite_fraction"),
        ({"elite_fraction": 1.5}, "algo.elite_fraction"),
        ({"population_size": 5, "elite_fraction": 0.2}, "algo.elite_fraction"),
        ({"initial_sigma": 0.0}, "algo.initial_sigma"),
        ({"extra_noise": -0.1}, "algo.extra_noise"),
        ({"noise_decay_generations": -1}, "algo.noise_decay_generations"),
    ],
)
def test_invalid_settings_name_their_field(overrides, field):
    with pytest.raises(ConfigError) as error:
        CEMConfig(**overrides)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}:")


def test_the_dataclass_is_a_valid_hydra_schema():
    """What neuroplug does with ``algo=cem algo.elite_fraction=...`` on the command line."""
    node = OmegaConf.structured(CEMConfig)
    node.name = "cem"
    node.elite_fraction = 0.5
    config = to_dataclass(CEMConfig, node, "algo")
    assert config.num_elites == 32
    node.elite_fraction = 2.0
    with pytest.raises(ConfigError, match=r"^algo\.elite_fraction:"):
        to_dataclass(CEMConfig, node, "algo")


def test_the_entry_point_names_the_algorithm_class():
    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    entry_points = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    module, _, attribute = entry_points["neuroplug.algorithms"]["cem"].partition(":")
    assert module == CrossEntropyMethod.__module__
    assert attribute == CrossEntropyMethod.__qualname__


def test_cem_honours_neuroplugs_algorithm_contract():
    """neuroplug ships its plugin contract as a reusable check; third parties run it too."""
    check_algorithm_contract(CrossEntropyMethod)
