"""The interface of a policy network as neuroplug uses it: math on flat parameters."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from neuroplug.nets.layout import ParameterLayout
from neuroplug.seeds import init_generator


class Network(ABC):
    """An architecture: its parameter layout, initialisation and batched forward.

    Parameters are never held here; they come as rows of a ``(n, D)`` matrix, one row per
    population member, so one call evaluates n different networks.
    """

    layout: ParameterLayout
    input_shape: tuple[int, ...]
    output_size: int

    @property
    def num_params(self) -> int:
        """Parameters per member."""
        return self.layout.num_params

    @abstractmethod
    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        """A freshly initialised ``(D,)`` parameter vector."""

    @abstractmethod
    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, output_size)``: row j of ``params`` applied to ``inputs[j]``."""

    def forward_single(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(b, output_size)`` of one parameter vector ``(D,)`` on a batch of inputs.

        The per-member reference the batched forward is tested against. Networks that read
        their parameters through ``layout.tensor`` (the MLP, the Nature CNN) also take the
        vector's named tensors (``layout.split``): what learners train.
        """
        return torch.cat(
            [self.forward_population(params.unsqueeze(0), x.unsqueeze(0)) for x in inputs]
        )

    @abstractmethod
    def describe(self) -> str:
        """One line for logs: the architecture and its parameter count."""


@dataclass(frozen=True)
class SeededInitializer:
    """``seed -> network.initial_params(seed)`` as a picklable callable, so populations of
    fresh draws can travel as seeds (to another process or machine) and be rebuilt there."""

    network: Network

    def __call__(self, seed: int) -> torch.Tensor:
        return self.network.initial_params(init_generator(seed)).float()


def normc_(weight: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    """OpenAI ES's ``normc`` init: Gaussian columns rescaled to norm ``std`` per output unit."""
    weight.normal_(generator=generator)
    weight *= std / weight.pow(2).sum(dim=0, keepdim=True).sqrt()
    return weight
