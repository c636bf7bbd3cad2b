"""Small modules for the factored low-rank tests: token embeddings, linear layers and a
LayerNorm (:class:`TokenMixer`); one that folds its rows into one batch (:class:`RowFolder`);
one wide linear layer (:class:`WideLinear`)."""

from __future__ import annotations

import torch
from torch import nn


class TokenMixer(nn.Module):
    """Observations read as 4 token ids (their magnitudes) and as a vector, mixed."""

    def __init__(self, observation_shape, outputs: int, width: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, width)
        self.read = nn.Linear(observation_shape[0], width)
        self.norm = nn.LayerNorm(width)
        self.hidden = nn.Linear(width, width)
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        ids = (observations.abs() * 3).long().clamp(0, 9)
        hidden = torch.tanh(self.read(observations)) + self.embed(ids).mean(1)
        return self.out(torch.relu(self.hidden(self.norm(hidden))))


class RowFolder(nn.Module):
    """Folds its batch of rows and their entries into one batch before a linear layer: a
    layer no longer sees one row per member."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__()
        self.mix = nn.Linear(1, 64)
        self.out = nn.Linear(64 * observation_shape[0], outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        rows, entries = observations.shape
        mixed = torch.tanh(self.mix(observations.reshape(rows * entries, 1)))
        return self.out(mixed.reshape(rows, -1))


class WideLinear(nn.Module):
    """One ``width x width`` linear layer between the observations and the outputs."""

    def __init__(self, observation_shape, outputs: int, width: int = 2048) -> None:
        super().__init__()
        self.read = nn.Linear(observation_shape[0], width)
        self.wide = nn.Linear(width, width)
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.wide(torch.tanh(self.read(observations)))))
