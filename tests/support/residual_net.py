"""Networks that exist only in the tests, as a user's own ``torch.nn.Module``s are: a small
residual MLP with LayerNorm, and modules that break the ``net.type=module`` contract."""

from __future__ import annotations

import math

import torch
from torch import nn


class ResidualMLP(nn.Module):
    """``input -> tanh(W x) -> (h + block(h)) x blocks -> outputs``, a block being
    LayerNorm, a linear layer and tanh."""

    def __init__(self, observation_shape, outputs: int, width: int = 32, blocks: int = 1) -> None:
        super().__init__()
        self.embed = nn.Linear(math.prod(observation_shape), width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.Tanh())
            for _ in range(blocks)
        )
        self.head = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.embed(observations.flatten(1)))
        for block in self.blocks:
            hidden = hidden + block(hidden)
        return self.head(hidden)


class RecurrentEncoder(nn.Module):
    """A GRU written with linear layers (``torch.func`` batches it over members; the
    fused ``nn.GRUCell`` has no batching rule and would run member by member): a
    recurrent module for ``net.features`` > 0, its state its features."""

    def __init__(self, observation_shape, features: int, width: int = 16) -> None:
        super().__init__()
        self.state_size = features
        self.embed = nn.Linear(math.prod(observation_shape), width)
        self.gates = nn.Linear(width + features, 2 * features)
        self.candidate = nn.Linear(width + features, features)

    def forward(self, observations: torch.Tensor, state: torch.Tensor):
        x = torch.tanh(self.embed(observations.flatten(1)))
        update, reset = torch.sigmoid(self.gates(torch.cat((x, state), 1))).chunk(2, 1)
        candidate = torch.tanh(self.candidate(torch.cat((x, reset * state), 1)))
        state = (1 - update) * state + update * candidate
        return state, state


class WithRunningStatistics(ResidualMLP):
    """Keeps BatchNorm's running statistics: state outside its parameters."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__(observation_shape, outputs)
        self.norm = nn.BatchNorm1d(32)


class OneOutput(ResidualMLP):
    """Returns one number per observation whatever the env's actions."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__(observation_shape, 1)


NOT_A_MODULE = object()


class PlainMLP(nn.Module):
    """``nn.Sequential`` of linear layers and tanh: what most small policies are, run
    without ``functional_call`` (neuroplug.nets.module_chain)."""

    def __init__(self, observation_shape, outputs: int, width: int = 16) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(observation_shape[0], width),
            nn.Tanh(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, outputs),
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.layers(observations)
