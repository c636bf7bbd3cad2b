"""The contract every algorithm plugin honours, checked without any environment.

Use it from a plugin's own tests::

    from neuroplug.testing import check_algorithm_contract

    def test_my_algorithm_honours_the_contract():
        check_algorithm_contract(MyAlgorithm)

The algorithm optimises a synthetic task — fitness ``-||theta - target||^2``, behaviours
the first two parameters — so the check runs in seconds and needs no simulator. It checks:
populations are well formed; ``tell`` accepts results of the shape the algorithm asked
for and returns scalar stats; every generation ends after a bounded number of rounds; a
fixed seed gives identical runs; and a checkpoint (``state_dict`` through ``torch.save``)
continues exactly like the run it was taken from.
"""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import Any

import torch

from neuroplug.api import Algorithm, AlgorithmConfig, EvaluationResult
from neuroplug.population import Population
from neuroplug.testing.synthetic import synthetic_result

MAX_ROUNDS_PER_GENERATION = 10
BEHAVIOUR_SIZE = 2


class ContractViolation(AssertionError):
    """An algorithm broke the plugin contract; the message says which part."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def _initializer(num_params: int):
    def draw(seed: int) -> torch.Tensor:
        return 0.1 * torch.randn(num_params, generator=torch.Generator().manual_seed(seed))

    return draw


def _evaluate(
    algorithm: Algorithm, population: Population, target: torch.Tensor
) -> EvaluationResult:
    """What a scheduler would return on the synthetic task (deterministic per member)."""
    members = population.materialize(device="cpu")
    fitness = -((members - target) ** 2).sum(dim=1).double().numpy()
    behaviours = None
    if algorithm.behaviour() is not None:
        behaviours = members[:, :BEHAVIOUR_SIZE].double().numpy()
    return synthetic_result(fitness, algorithm.episodes_per_member(), behaviours=behaviours)


def _run_generation(
    algorithm: Algorithm, target: torch.Tensor, num_params: int
) -> list[torch.Tensor]:
    """Rounds until ``generation`` grows; returns every population's materialised members."""
    start = algorithm.generation
    populations = []
    for _ in range(MAX_ROUNDS_PER_GENERATION):
        population = algorithm.ask()
        _require(
            isinstance(population, Population),
            f"ask() returned {type(population).__name__}, not a Population",
        )
        _require(len(population) >= 1, "ask() returned an empty population")
        _require(
            population.num_params == num_params,
            f"ask() built members of {population.num_params} params, the network has {num_params}",
        )
        members = population.materialize(device="cpu")
        _require(bool(torch.isfinite(members).all()), "ask() produced non-finite parameters")
        populations.append(members)
        stats = algorithm.tell(population, _evaluate(algorithm, population, target))
        _require(isinstance(stats, dict), "tell() must return a dict of scalar stats")
        for key, value in stats.items():
            _require(
                isinstance(key, str) and isinstance(value, int | float),
                f"stat {key!r} is not a number",
            )
        if algorithm.generation != start:
            _require(algorithm.generation == start + 1, "generation must grow by exactly one")
            return populations
    raise ContractViolation(
        f"generation did not advance within {MAX_ROUNDS_PER_GENERATION} ask/tell rounds"
    )


def _build(
    algorithm_class: type[Algorithm], config: AlgorithmConfig, num_params: int, seed: int
) -> Algorithm:
    initial = _initializer(num_params)(seed)
    return algorithm_class(config, initial, seed, initializer=_initializer(num_params))


def _roundtrip(state: dict[str, Any]) -> dict[str, Any]:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def check_algorithm_contract(
    algorithm_class: type[Algorithm],
    config: AlgorithmConfig | None = None,
    num_params: int = 24,
    generations: int = 3,
    seed: int = 0,
) -> None:
    """Raise :class:`ContractViolation` unless ``algorithm_class`` honours the contract."""
    config = config or algorithm_class.config_class()
    if not config.name:
        config = replace(config, name=algorithm_class.__name__.lower())
    target = torch.linspace(-1.0, 1.0, num_params)

    first = _build(algorithm_class, config, num_params, seed)
    _require(first.generation == 0, "a new algorithm must start at generation 0")
    history = [_run_generation(first, target, num_params) for _ in range(generations)]
    policy = first.policy_params()
    _require(
        tuple(policy.shape) == (num_params,), f"policy_params() has shape {tuple(policy.shape)}"
    )
    _require(bool(torch.isfinite(policy).all()), "policy_params() is not finite")
    _require(math.isfinite(float(-((policy - target) ** 2).sum())), "policy fitness is not finite")

    second = _build(algorithm_class, config, num_params, seed)
    for generation, populations in enumerate(history):
        again = _run_generation(second, target, num_params)
        _require(
            len(again) == len(populations)
            and all(torch.equal(a, b) for a, b in zip(again, populations, strict=True)),
            f"the same seed gave different populations in generation {generation}",
        )

    resumed = _build(algorithm_class, config, num_params, seed + 1)
    resumed.load_state_dict(_roundtrip(first.state_dict()))
    _require(
        resumed.generation == first.generation, "load_state_dict() did not restore the generation"
    )
    for generation in range(2):
        expected, actual = (
            _run_generation(first, target, num_params),
            _run_generation(resumed, target, num_params),
        )
        _require(
            len(expected) == len(actual)
            and all(torch.equal(a, b) for a, b in zip(expected, actual, strict=True)),
            f"a restored checkpoint diverged {generation + 1} generation(s) later",
        )
    _require(
        torch.equal(first.policy_params(), resumed.policy_params()),
        "restored policy_params() differ",
    )
