"""``net.type=causal_lm``: a decoder-only transformer writing a text task's completion a
token a step, its keys and values kept as its recurrent state (a KV cache).

The observation is the context so far (:mod:`neuroplug.envs.text.env`: token ids + 1, 0
pads: the prompt at an episode's start, one more token each step). A step reads the tokens
its cache does not hold yet (:mod:`neuroplug.nets.kv_cache`: the whole prompt in one
forward at the first step, then the newest token alone), embeds them with their
positions, and in each block attends from them to the keys and values of every earlier
token, which the state holds: ``layers x 2 x context x d_model`` numbers per sequence and
the count of tokens they hold, zero at an episode's start (neuroplug zeroes a recurrent
state there), the new tokens' written in at their places. A step after the prompt costs
one token's projections and one row of attention, not the whole context's forward again.
:meth:`CausalLM.forward_sequence` runs a whole context at once under a causal mask: the
same numbers (a test holds them equal).

It is a recurrent encoder (:mod:`neuroplug.nets.module_network`): its features are the
last token's normalised hidden state, and neuroplug's linear head on them is the LM head
(one output per token id, the action). Every parameter belongs to
an ``nn.Linear``, an ``nn.Embedding`` or an ``nn.LayerNorm``, so with
``algo.perturbation=lowrank`` a population runs factored: one base forward for every
member's rows, each row's own low-rank part added by hooks, never a member's matrices
(``neuroplug_backends.module_lowrank``).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets import kv_cache
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.transformer_config import TransformerSettings

INIT_STD = 0.02
"""GPT-2's initial scale for embeddings and projections."""


def attend(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, visible: torch.Tensor,
    heads: int,
) -> torch.Tensor:  # fmt: skip
    """Multi-head attention written out (batched over members by vmap or by rows):
    ``queries`` ``(n, q, d)``, ``keys``/``values`` ``(n, c, d)``, ``visible`` ``(n, q, c)``
    bool (what each query may see) -> ``(n, q, d)``."""
    n, q, d = queries.shape
    width = d // heads

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], x.shape[1], heads, width).transpose(1, 2)

    scores = split(queries) @ split(keys).transpose(-1, -2) / math.sqrt(width)
    scores = scores.masked_fill(~visible.unsqueeze(1), float("-inf"))
    mixed = torch.softmax(scores, dim=-1) @ split(values)  # (n, heads, q, width)
    return mixed.transpose(1, 2).reshape(n, q, d)


class _Block(nn.Module):
    def __init__(self, width: int, heads: int, mlp_ratio: int) -> None:
        super().__init__()
        self.heads = heads
        self.attention_norm = nn.LayerNorm(width)
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)
        self.out = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.expand = nn.Linear(width, mlp_ratio * width)
        self.contract = nn.Linear(mlp_ratio * width, width)

    def forward(
        self, x: torch.Tensor, keys: torch.Tensor | None, values: torch.Tensor | None,
        writes: torch.Tensor | None, visible: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        """``x`` ``(n, q, d)``; with a cache (``keys``, ``values`` ``(n, c, d)``) the new
        tokens' keys and values are written where ``writes`` ``(n, q, c)`` places them
        (:func:`neuroplug.nets.kv_cache.write`); without one the tokens attend to each
        other."""
        normed = self.attention_norm(x)
        key, value = self.key(normed), self.value(normed)
        if keys is not None:
            keys, values = kv_cache.write(keys, key, writes), kv_cache.write(values, value, writes)
        else:
            keys, values = key, value
        x = x + self.out(attend(self.query(normed), keys, values, visible, self.heads))
        x = x + self.contract(nn.functional.gelu(self.expand(self.mlp_norm(x))))
        return x, keys, values


class CausalLM(nn.Module):
    """Token and position embeddings, ``layers`` pre-norm blocks, a final LayerNorm; the
    state is the KV cache (see the module docstring)."""

    def __init__(
        self, observation_shape: tuple[int, ...], features: int, vocabulary: int,
        d_model: int = 64, heads: int = 4, layers: int = 2, mlp_ratio: int = 4,
    ) -> None:  # fmt: skip
        super().__init__()
        if features != d_model:
            raise TypeError(f"features ({features}) must equal d_model ({d_model})")
        self.context = int(observation_shape[0])
        self.width, self.depth = d_model, layers
        self.token = nn.Embedding(vocabulary, d_model)
        self.position = nn.Embedding(self.context, d_model)
        self.blocks = nn.ModuleList(_Block(d_model, heads, mlp_ratio) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.state_size = layers * 2 * self.context * d_model + 1  # the cache, its count
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=INIT_STD)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(
        self, observations: torch.Tensor, state: torch.Tensor, window: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The newest token's features ``(n, d_model)`` and the state with the keys and
        values of every token it did not hold written in (the prompt's at an episode's
        first step): :mod:`neuroplug.nets.kv_cache`, whose ``window`` it takes."""
        n = observations.shape[0]
        step = kv_cache.block(observations, state, window)
        x = self.token(step.tokens) + self.position(step.places)  # (n, window, d)
        cache = state[:, :-1].reshape(n, self.depth, 2, self.context, self.width)
        written_caches = []
        for index, block in enumerate(self.blocks):
            x, keys, values = block(
                x, cache[:, index, 0], cache[:, index, 1], step.writes, step.sees
            )
            written_caches.append(torch.stack((keys, values), dim=1))
        cached = torch.stack(written_caches, dim=1).reshape(n, -1)
        return self.norm(x[:, -1]), torch.cat((cached, step.count), dim=1)

    step_window = staticmethod(kv_cache.step_window)

    def forward_sequence(self, ids: torch.Tensor) -> torch.Tensor:
        """Every place's features ``(n, c, d_model)`` of whole contexts ``ids`` ``(n, c)``
        (ids + 1, as observed), each token attending to itself and those before it (no
        cache)."""
        places = torch.arange(ids.shape[1], device=ids.device)
        tokens = (ids.long() - 1).clamp(min=0)  # a padded place is read by no token before it
        x = self.token(tokens) + self.position(places.expand(ids.shape[0], -1))
        visible = (places.unsqueeze(0) <= places.unsqueeze(1)).expand(ids.shape[0], -1, -1)
        for block in self.blocks:
            x = block(x, None, None, None, visible)[0]
        return self.norm(x)


def observes_token_ids(env: EnvSpec) -> bool:
    """Whether ``env`` observes a context of token ids + 1 and acts by token id (or scores
    each token: a text task's ``scoring=likelihood``): a text task (its family says so, or
    its Box does: 0 .. actions in every place)."""
    if len(env.obs_shape) != 1:
        return False
    ids = ((0.0, float(env.num_actions)),) * env.obs_shape[0]
    return env.family.writes_text or (env.discrete and env.obs_bounds == ids)


def require_token_ids(env: EnvSpec, net_type: str) -> None:
    """Refuse, naming ``net.type``, a language model for an env without token ids."""
    if not observes_token_ids(env):
        raise ConfigError(
            "net.type",
            f"{net_type} reads token ids and writes tokens (a text task: env=addition, "
            f"sorting, countdown), and {env.task_id} observes no token ids",
            "a text task, or mlp or transformer for this env",
        )


class CausalLMNetwork(ModuleNetwork):
    """:class:`CausalLM` as a network (``net.type=causal_lm``) for a text task."""

    type_name = "causal_lm"
    config_class = TransformerSettings
    reads_token_ids = True

    def __init__(self, input_shape, output_size: int, kwargs: dict | None = None) -> None:
        kwargs = {**dataclasses.asdict(TransformerSettings()), **dict(kwargs or {})}
        super().__init__(CausalLM, input_shape, output_size, kwargs, "causal_lm", kwargs["d_model"])

    def resized(self, output_size: int) -> CausalLMNetwork:
        return CausalLMNetwork(self.input_shape, output_size, self.kwargs)

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> CausalLMNetwork:
        require_token_ids(env, "causal_lm")
        # A text task's actions are its tokenizer's ids.
        kwargs = {**dict(config.kwargs), "vocabulary": env.num_actions}
        network = cls(env.obs_shape, env.num_actions, kwargs)
        network.check_module("causal_lm")
        return network

    @property
    def state_bytes(self) -> int:
        """One sequence's KV cache (and its count), in bytes (float32)."""
        return 4 * self.state_size

    def describe(self) -> str:
        kwargs = self.kwargs
        return (
            f"causal_lm d{kwargs['d_model']} x {kwargs['layers']} layers, {kwargs['heads']} "
            f"heads, context {self.input_shape[0]}, vocabulary {kwargs['vocabulary']}, KV "
            f"cache {self.state_bytes / 1024:.0f} KiB a sequence, {self.num_params:,} params"
        )
