"""``net.type=transformer``: a small pre-norm transformer reading a vector observation's
entries as tokens.

Each entry ``x_j`` becomes a token ``x_j w + b + p_j`` (a shared ``nn.Linear(1, d)`` and a
learned position ``nn.Embedding``); ``layers`` blocks of ``x + MHA(LN(x))`` and
``x + MLP(LN(x))`` (GELU, ``mlp_ratio * d`` wide) follow; the tokens' mean, normalised,
goes through the output layer. It is a ``net.type=module`` network built from settings
(:class:`~neuroplug.nets.module_network.ModuleNetwork`): a population runs it batched over
members with its attention written out (:mod:`neuroplug.nets.attention`), and with
``algo.perturbation=lowrank`` in factored low rank (every parameter is a linear layer's,
an embedding's, a LayerNorm's or the attention's: ``neuroplug_backends.module_lowrank``).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.transformer_config import TransformerSettings


class _Block(nn.Module):
    def __init__(self, width: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp_norm = nn.LayerNorm(width)
        self.expand = nn.Linear(width, mlp_ratio * width)
        self.contract = nn.Linear(mlp_ratio * width, width)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        normed = self.attention_norm(tokens)
        tokens = tokens + self.attention(normed, normed, normed, need_weights=False)[0]
        hidden = nn.functional.gelu(self.expand(self.mlp_norm(tokens)))
        return tokens + self.contract(hidden)


class TokenTransformer(nn.Module):
    """Observation entries as tokens, ``layers`` blocks, the mean token to the outputs."""

    def __init__(
        self,
        observation_shape: tuple[int, ...],
        outputs: int,
        d_model: int = 64,
        heads: int = 4,
        layers: int = 2,
        mlp_ratio: int = 4,
    ) -> None:
        super().__init__()
        self.length = int(observation_shape[0])
        self.read = nn.Linear(1, d_model)
        self.position = nn.Embedding(self.length, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, heads, mlp_ratio) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, outputs)
        # The observation must move the outputs more than a member's perturbation moves
        # them as a constant. With PyTorch's defaults (a read bias and positions of std 1
        # against entries of ~0.05, a wide output layer) each fresh network played one
        # action whatever CartPole showed it (its margin moved ~0.003 by the observation,
        # ~0.19 between members): a whole ES population tied at returns of 9-10 and never
        # learned. Tokens are the entry itself (no read bias) at a small learned position
        # (GPT-2's 0.02), and the output layer starts small as every neuroplug head's.
        nn.init.normal_(self.read.weight)
        nn.init.zeros_(self.read.bias)
        nn.init.normal_(self.position.weight, std=0.02)
        nn.init.orthogonal_(self.out.weight, gain=0.01)
        nn.init.zeros_(self.out.bias)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(self.length, device=observations.device)
        positions = positions.expand(observations.shape[0], self.length)  # a row each
        tokens = self.read(observations.unsqueeze(-1)) + self.position(positions)
        for block in self.blocks:
            tokens = block(tokens)
        return self.out(self.norm(tokens.mean(dim=1)))


class TransformerNetwork(ModuleNetwork):
    """:class:`TokenTransformer` as a network (``net.type=transformer``)."""

    type_name = "transformer"
    reads_features = False
    config_class = TransformerSettings

    def __init__(self, input_shape, output_size: int, kwargs: dict | None = None) -> None:
        super().__init__(TokenTransformer, input_shape, output_size, kwargs, "transformer")

    def resized(self, output_size: int) -> TransformerNetwork:
        return TransformerNetwork(self.input_shape, output_size, self.kwargs)

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> TransformerNetwork:
        if len(env.obs_shape) != 1:
            raise ConfigError(
                "net.type",
                f"transformer reads a vector observation's entries as tokens, and "
                f"{env.task_id} observes shape {env.obs_shape}",
                "mlp or auto, or a vector task",
            )
        network = cls(env.obs_shape, env.num_actions, dict(config.kwargs))
        network.check_module("transformer")
        return network

    def describe(self) -> str:
        kwargs = {**dataclasses.asdict(TransformerSettings()), **self.kwargs}
        return (
            f"transformer d{kwargs['d_model']} x {kwargs['layers']} layers, "
            f"{kwargs['heads']} heads over {self.input_shape[0]} tokens (torch.func over "
            f"members), {self.num_params:,} params"
        )
