"""Small attention policies for tests: ``nn.MultiheadAttention`` (batch first or not, with
a causal mask), an ``nn.TransformerEncoderLayer``, and ``F.scaled_dot_product_attention``
called directly. Each reads its observation as a sequence of 4 tokens of one number."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class _Tokens(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.embed = nn.Linear(1, width)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.embed(observations.unsqueeze(-1))  # (b, 4, width)


class SelfAttention(nn.Module):
    """Tokens, causal multi-head self-attention, the last token's output."""

    def __init__(self, observation_shape, outputs: int, width: int = 8, batch_first: bool = True):
        super().__init__()
        self.tokens = _Tokens(width)
        self.batch_first = batch_first
        self.attention = nn.MultiheadAttention(width, 2, batch_first=batch_first)
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        tokens = self.tokens(observations)
        length = tokens.shape[1]
        mask = torch.ones(length, length, dtype=torch.bool).triu(1)  # True: not attended
        if not self.batch_first:
            tokens = tokens.transpose(0, 1)
        mixed, weights = self.attention(tokens, tokens, tokens, attn_mask=mask)
        last = mixed[:, -1] if self.batch_first else mixed[-1]
        return self.out(last) + weights.sum() * 0.0  # the weights computed too


class Encoder(nn.Module):
    """Tokens through one ``nn.TransformerEncoderLayer``, mean-pooled."""

    def __init__(self, observation_shape, outputs: int, width: int = 8) -> None:
        super().__init__()
        self.tokens = _Tokens(width)
        self.layer = nn.TransformerEncoderLayer(width, 2, 16, dropout=0.0, batch_first=True)
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.out(self.layer(self.tokens(observations)).mean(1))


class DotProduct(nn.Module):
    """Tokens, one head of ``F.scaled_dot_product_attention`` (causal), the last token."""

    def __init__(self, observation_shape, outputs: int, width: int = 8) -> None:
        super().__init__()
        self.tokens = _Tokens(width)
        self.query = nn.Linear(width, width)
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        tokens = self.tokens(observations)
        mixed = F.scaled_dot_product_attention(self.query(tokens), tokens, tokens, is_causal=True)
        return self.out(mixed[:, -1])
