"""Stand-ins for environments and networks, for testing algorithms on synthetic fitness."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.evolution.context import algorithm_context
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.network import Network


def synthetic_result(
    fitness, episodes: int = 1, behaviors=None, transitions=None
) -> EvaluationResult:
    """What a scheduler returns when every episode of member i scores ``fitness[i]``.

    ``behaviors``, if given, is ``(P, d)``: member i's behavior in each of its episodes.
    Every episode counts as one step, frame and forward pass; ``transitions`` (one per
    episode, :func:`synthetic_transitions`) are passed through.
    """
    returns = np.repeat(np.asarray(fitness, dtype=np.float64).reshape(-1, 1), episodes, axis=1)
    if behaviors is not None:
        behaviors = np.repeat(np.asarray(behaviors, dtype=np.float64)[:, None], episodes, axis=1)
    return EvaluationResult(
        returns=returns,
        lengths=np.ones(returns.shape, dtype=np.int64),
        env_steps=returns.size,
        frames=returns.size,
        forward_passes=returns.size,
        behaviors=behaviors,
        transitions=transitions,
    )


def synthetic_transitions(env, fitness, episodes: int, generator: np.random.Generator):
    """One step per episode of each member on ``env``'s spaces: random observations and
    actions in the box, the member's fitness as the reward, never terminated."""
    from neuroplug.api import Transitions

    members = np.repeat(np.arange(len(fitness)), episodes)
    rows = len(members)
    observations = generator.standard_normal((rows + 1, *env.obs_shape)).astype(np.float32)
    unit = generator.uniform(-1, 1, (rows, env.num_actions))
    actions = env.action_low + (unit + 1) * 0.5 * (env.action_high - env.action_low)
    rewards = np.asarray(fitness, dtype=np.float32)[members]
    return Transitions(
        observations[:-1],
        actions.astype(np.float32),
        np.nan_to_num(rewards, nan=0.0, neginf=-1e6),
        observations[1:],
        np.zeros(rows, dtype=bool),
        members.astype(np.int64),
    )


class VectorNetwork(Network):
    """A network that is just a flat ``(D,)`` vector (no layers), for algorithm tests.

    It initialises as ``init_std * N(0, 1)`` per parameter; its output is the first
    parameter, whatever the input.
    """

    def __init__(self, num_params: int, init_std: float = 0.1) -> None:
        self.layout = ParameterLayout([("theta", (num_params,))])
        self.input_shape = (1,)
        self.output_size = 1
        self.init_std = init_std

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        return self.init_std * torch.randn(self.num_params, generator=generator)

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        return params[:, :1]

    def describe(self) -> str:
        return f"vector of {self.num_params} parameters"


def synthetic_context(
    num_params: int = 24,
    seed: int = 0,
    initializer: Callable[[int], torch.Tensor] | None = None,
    initial_params: torch.Tensor | None = None,
    network: Network | None = None,
    env=None,
) -> AlgorithmContext:
    """An :class:`~neuroplug.api.AlgorithmContext` without an environment.

    Defaults: a :class:`VectorNetwork` of ``num_params`` (of ``initial_params``' size when
    given); fresh draws ``0.1 * N(0, 1)`` seeded by their seed; the initial parameters are
    the draw of ``seed``. Pass
    ``network`` to test an algorithm that reads the architecture (low-rank ES), and ``env``
    (an :class:`~neuroplug.envs.spec.EnvSpec`) for one that reads the env.
    """
    if network is None:
        size = num_params if initial_params is None else initial_params.numel()
        network = VectorNetwork(size)
    context = algorithm_context(network, seed, env)
    if initializer is not None:
        context = AlgorithmContext(network, initializer(seed), seed, initializer, env)
    if initial_params is not None:
        context = AlgorithmContext(network, initial_params.float(), seed, context.initializer, env)
    return context


# --- Benchmark functions of black-box optimisation, and a driver ------------------------
# Costs to minimise over rows x (P, D); an algorithm maximises fitness, so it is told -cost.


def sphere(x: np.ndarray) -> np.ndarray:
    """``sum x_i^2``: optimum 0 at the origin."""
    return np.sum(x * x, axis=1)


def rosenbrock(x: np.ndarray) -> np.ndarray:
    """``sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2``: optimum 0 at (1, ..., 1)."""
    return np.sum(100 * (x[:, 1:] - x[:, :-1] ** 2) ** 2 + (1 - x[:, :-1]) ** 2, axis=1)


def rastrigin(x: np.ndarray) -> np.ndarray:
    """``10 D + sum x_i^2 - 10 cos(2 pi x_i)``: optimum 0 at the origin, a local optimum
    near every integer point."""
    return 10 * x.shape[1] + np.sum(x * x - 10 * np.cos(2 * np.pi * x), axis=1)


def ellipsoid(dimension: int, condition: float = 1e6):
    """``sum_i condition^((i-1)/(D-1)) x_i^2``: optimum 0 at the origin, its axes the
    coordinates' (separable: what a diagonal covariance learns)."""
    scales = condition ** (np.arange(dimension) / max(1, dimension - 1))

    def cost(x: np.ndarray) -> np.ndarray:
        return np.sum(scales * x * x, axis=1)

    return cost


def rotated_ellipsoid(dimension: int, seed: int = 0, condition: float = 1e6):
    """``sum_i condition^((i-1)/(D-1)) (R x)_i^2`` for a random rotation ``R`` drawn from
    ``seed``: optimum 0 at the origin, axes neither aligned nor equally scaled (what a
    diagonal covariance cannot learn)."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((dimension, dimension)))
    scales = condition ** (np.arange(dimension) / max(1, dimension - 1))

    def cost(x: np.ndarray) -> np.ndarray:
        rotated = x @ rotation.T
        return np.sum(scales * rotated * rotated, axis=1)

    return cost


def minimize(
    algorithm, cost: Callable[[np.ndarray], np.ndarray], target: float, max_evaluations: int
) -> tuple[int, float]:
    """Run ``algorithm`` (built on a :func:`synthetic_context`) on ``cost`` until a
    member's cost is at most ``target`` or ``max_evaluations`` are spent; returns the
    evaluations used and the best cost found."""
    evaluations, best = 0, float("inf")
    while evaluations < max_evaluations:
        population = algorithm.ask()
        members = population.materialize(device="cpu").double().numpy()
        costs = cost(members)
        evaluations += len(costs)
        best = min(best, float(costs.min()))
        if best <= target:
            break
        algorithm.tell(population, synthetic_result(-costs))
    return evaluations, best
