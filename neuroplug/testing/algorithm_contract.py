"""The contract every algorithm plugin honours, checked without any environment.

Use it from a plugin's own tests::

    from neuroplug.testing import check_algorithm_contract

    def test_my_algorithm_honours_the_contract():
        check_algorithm_contract(MyAlgorithm)

The algorithm optimizes a synthetic task — fitness ``-||theta - target||^2``, behaviors
the first two parameters — so the check runs in seconds and needs no simulator. It checks:
populations are well formed; ``tell`` accepts results of the shape the algorithm asked
for and returns scalar stats; every ``tell`` either ends the generation or calls
``continue_generation()``, within ``max_rounds_per_generation`` rounds; ``best_params``
and ``policy_params()`` are finite ``(D,)`` float32 CPU tensors; a fixed seed gives
identical runs; and a checkpoint (``state_dict`` through ``torch.save`` and back through the
weights-only loader that resuming uses, so plain data only) continues exactly like the run
it was taken from.

Arguments: ``config`` (default: the plugin's ``config_class()``), ``num_params`` of the
synthetic network (a flat vector; pass ``network`` instead for an algorithm that reads the
architecture), ``generations`` run before the checks, and the ``seed``. An algorithm with
``requires_env`` (its own critics need the action space) is built for ``task`` (default
Pendulum-v1, only its spaces are used: nothing is stepped) with a small MLP; one that
``wants_transitions()`` gets one synthetic step per episode (:func:`~neuroplug.testing.
synthetic.synthetic_transitions`).
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from neuroplug.api import Algorithm, AlgorithmConfig, EvaluationResult
from neuroplug.errors import PluginError
from neuroplug.evolution.rounds import generation_ended, round_marker
from neuroplug.nets.network import Network
from neuroplug.population.members import Population
from neuroplug.testing.synthetic import (
    synthetic_context,
    synthetic_result,
    synthetic_transitions,
)
from neuroplug.training.checkpoint import load_data

BEHAVIOR_SIZE = 2


class ContractViolation(AssertionError):
    """An algorithm broke the plugin contract; the message says which part."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def _evaluate(
    algorithm: Algorithm, population: Population, target: torch.Tensor
) -> EvaluationResult:
    """What a scheduler would return on the synthetic task (deterministic per member)."""
    members = population.materialize(device="cpu")
    fitness = -((members - target) ** 2).sum(dim=1).double().numpy()
    behaviors = None
    if algorithm.behavior() is not None:
        size = BEHAVIOR_SIZE
        if algorithm.context.env is not None:  # the descriptor's size on the task
            from neuroplug.evaluation.behaviors import resolve

            size = resolve(algorithm.behavior(), algorithm.context.env).size
        behaviors = members[:, :size].double().numpy()
    episodes = algorithm.episodes_per_member()
    transitions = None
    if algorithm.wants_transitions():
        # Deterministic in the members, as the rest of the synthetic result.
        generator = np.random.default_rng(int(members.abs().sum().item() * 1e3) % 2**32)
        transitions = synthetic_transitions(algorithm.context.env, fitness, episodes, generator)
    return synthetic_result(fitness, episodes, behaviors=behaviors, transitions=transitions)


def _run_generation(
    algorithm: Algorithm, target: torch.Tensor, num_params: int
) -> list[torch.Tensor]:
    """Rounds until ``generation`` grows; returns every population's materialised members."""
    start = algorithm.generation
    populations = []
    for _ in range(algorithm.max_rounds_per_generation):
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
        before = round_marker(algorithm)
        stats = algorithm.tell(population, _evaluate(algorithm, population, target))
        _require(isinstance(stats, dict), "tell() must return a dict of scalar stats")
        for key, value in stats.items():
            _require(
                isinstance(key, str) and isinstance(value, int | float),
                f"stat {key!r} is not a number",
            )
        try:
            ended = generation_ended(algorithm, before)
        except PluginError as error:
            raise ContractViolation(str(error)) from None
        if ended:
            _require(algorithm.generation == start + 1, "generation must grow by exactly one")
            return populations
    raise ContractViolation(
        f"generation did not advance within {algorithm.max_rounds_per_generation} ask/tell "
        "rounds (max_rounds_per_generation)"
    )


def _vector_check(value, num_params: int, what: str) -> None:
    _require(isinstance(value, torch.Tensor), f"{what} is {type(value).__name__}, not a tensor")
    _require(tuple(value.shape) == (num_params,), f"{what} has shape {tuple(value.shape)}")
    _require(value.dtype == torch.float32, f"{what} is {value.dtype}, not torch.float32")
    _require(value.device.type == "cpu", f"{what} is on {value.device}, not the CPU")
    _require(bool(torch.isfinite(value).all()), f"{what} is not finite")


def _build(
    algorithm_class: type[Algorithm],
    config: AlgorithmConfig,
    num_params: int,
    seed: int,
    network: Network | None,
    env=None,
) -> Algorithm:
    return algorithm_class(config, synthetic_context(num_params, seed, network=network, env=env))


def _task(task: str, network: Network | None):
    """``task``'s spec (nothing stepped) and a small MLP for it unless one is given."""
    from neuroplug.config.schema import EnvConfig
    from neuroplug.envs.make import make_spec
    from neuroplug.nets.mlp import MLP

    env = make_spec(EnvConfig(task_id=task))
    if network is None:
        network = MLP(env.obs_shape[0], [8], env.num_actions, "tanh")
    return env, network


def roundtrip(state: dict[str, Any], what: str = "the algorithm's state_dict()") -> dict[str, Any]:
    """``state`` through ``torch.save`` and the weights-only loader that resuming uses."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return load_data(buffer, what)


def check_algorithm_contract(
    algorithm_class: type[Algorithm],
    config: AlgorithmConfig | None = None,
    num_params: int = 24,
    generations: int = 3,
    seed: int = 0,
    network: Network | None = None,
    task: str | None = None,
) -> None:
    """Raise :class:`ContractViolation` unless ``algorithm_class`` honours the contract."""
    env = None
    if task is not None or algorithm_class.requires_env:
        env, network = _task(task or "Pendulum-v1", network)
    if network is not None:
        num_params = network.num_params
    config = config or algorithm_class.config_class()
    if not config.name:
        config = replace(config, name=algorithm_class.__name__.lower())
    target = torch.linspace(-1.0, 1.0, num_params)

    first = _build(algorithm_class, config, num_params, seed, network, env)
    _require(first.generation == 0, "a new algorithm must start at generation 0")
    history = [_run_generation(first, target, num_params) for _ in range(generations)]
    _vector_check(first.policy_params(), num_params, "policy_params()")
    if first.best_params is not None:
        _vector_check(first.best_params, num_params, "best_params")

    second = _build(algorithm_class, config, num_params, seed, network, env)
    for generation, populations in enumerate(history):
        again = _run_generation(second, target, num_params)
        _require(
            len(again) == len(populations)
            and all(torch.equal(a, b) for a, b in zip(again, populations, strict=True)),
            f"the same seed gave different populations in generation {generation}",
        )

    resumed = _build(algorithm_class, config, num_params, seed + 1, network, env)
    resumed.load_state_dict(roundtrip(first.state_dict()))
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
