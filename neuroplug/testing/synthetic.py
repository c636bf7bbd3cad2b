"""Stand-ins for environments and networks, for testing algorithms on synthetic fitness."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.network import Network


def synthetic_result(fitness, episodes: int = 1, behaviors=None) -> EvaluationResult:
    """What a scheduler returns when every episode of member i scores ``fitness[i]``.

    ``behaviors``, if given, is ``(P, d)``: member i's behavior in each of its episodes.
    Every episode counts as one step, frame and forward pass.
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
) -> AlgorithmContext:
    """An :class:`~neuroplug.api.AlgorithmContext` without an environment.

    Defaults: a :class:`VectorNetwork` of ``num_params`` (of ``initial_params``' size when
    given); fresh draws ``0.1 * N(0, 1)`` seeded by their seed; the initial parameters are
    the draw of ``seed``. Pass
    ``network`` to test an algorithm that reads the architecture (low-rank ES).
    """
    if network is None:
        size = num_params if initial_params is None else initial_params.numel()
        network = VectorNetwork(size)
    context = AlgorithmContext.for_network(network, seed)
    if initializer is not None:
        context = AlgorithmContext(network, initializer(seed), seed, initializer)
    if initial_params is not None:
        context = AlgorithmContext(network, initial_params.float(), seed, context.initializer)
    return context
