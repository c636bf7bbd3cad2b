"""``net.type=pretrained_lm``: a Hugging Face ``transformers`` causal language model (loaded
from a local directory, or built from a config) as a population writing a text task.

The observation is the context so far (:mod:`neuroplug.envs.text.env`: token ids + 1, 0
padding); the module runs the model's body on the context, takes the hidden state of its
newest token and applies the model's own output layer there: one logit per token id of the
env's tokenizer (the model's own, ``env.kwargs.tokenizer=<the same directory>``). The model
runs with eager attention (matrix products and a softmax), which batches over members;
padded places come after the newest token, where causal attention never looks.

It is a ``net.type=module`` network (:mod:`neuroplug.nets.module_network`): its flat
parameters are the model's (tied embeddings once), a population runs batched over members,
and with ``algo.perturbation=lowrank`` factored: the models of the Llama family (Llama,
Qwen2, Mistral: ``nn.Linear``, ``nn.Embedding`` and their RMSNorm) and GPT-2 (its
``Conv1D``, ``nn.Embedding``, ``nn.LayerNorm``) never have a member's matrices built
(``neuroplug_backends.module_lowrank``). A population's checkpoint is the model and seeds.

Those families step with a KV cache (:data:`CACHED_FAMILY`): the newest token alone
through the model's own layers, written out here. Other models run the whole context.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.causal_lm import require_token_ids
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.pretrained_lm_config import PretrainedLMSettings


def load_model(pretrained: str = "", config: dict[str, Any] | None = None) -> nn.Module:
    """The causal LM saved in ``pretrained``, or built from ``config`` (its ``model_type``
    and settings), float32, with eager attention; a ConfigError names the setting."""
    try:
        from transformers import AutoConfig, AutoModelForCausalLM
        from transformers.utils import logging
    except ImportError as error:
        raise ConfigError(
            "net.type",
            f"pretrained_lm needs transformers ({error})",
            "pip install 'neuroplug[hf]'",
        ) from None
    logging.disable_progress_bar()  # a member is built again per fresh draw: no bar each time
    if pretrained:
        try:
            return AutoModelForCausalLM.from_pretrained(
                pretrained, local_files_only=True, attn_implementation="eager",
                dtype=torch.float32,
            )  # fmt: skip
        except (OSError, ValueError) as error:
            raise ConfigError(
                "net.kwargs.pretrained",
                f"no causal language model could be read from {pretrained!r} "
                f"({str(error).splitlines()[0]})",
                "a local directory a model was saved in (save_pretrained)",
            ) from None
    settings = dict(config or {})
    try:
        built = AutoConfig.for_model(settings.pop("model_type"), **settings)
        return AutoModelForCausalLM.from_config(built, attn_implementation="eager")
    except (KeyError, ValueError, TypeError) as error:
        raise ConfigError(
            "net.kwargs.config", f"transformers refused it ({error})",
            "a model_type of transformers and that model's settings",
        ) from None  # fmt: skip


ROTARY_FAMILY = ("llama", "qwen2", "mistral")
"""Model types whose decoder layers the cached step writes out as Llama's (pre-norm
RMSNorm, rotary positions, grouped-query attention, a gated MLP)."""
CACHED_FAMILY = (*ROTARY_FAMILY, "gpt2")
"""Model types that step with a KV cache: the Llama family's, and GPT-2's (pre-norm
LayerNorm, learned positions, ``Conv1D`` projections, a GELU MLP)."""


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary positions: ``x`` ``(n, heads, 1, d)`` turned by ``cos``/``sin`` ``(n, 1, 1, d)``."""
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + turned * sin


class PretrainedLM(nn.Module):
    """A ``transformers`` causal LM as a whole policy: the logits of each context's newest
    token, over the first ``outputs`` token ids (the env's tokenizer's); for the Llama
    family (:data:`CACHED_FAMILY`) a recurrent one, its state the KV cache."""

    def __init__(
        self, observation_shape: tuple[int, ...], outputs: int, pretrained: str = "",
        config: dict[str, Any] | None = None, cache: bool | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.model = load_model(pretrained, config)
        self.outputs = int(outputs)
        self.context = int(observation_shape[0])
        settings = self.model.config
        family = settings.model_type in CACHED_FAMILY
        window = getattr(settings, "sliding_window", None) if getattr(
            settings, "use_sliding_window", settings.model_type == "mistral"
        ) else None  # fmt: skip
        if settings.model_type == "gpt2":  # its learned positions end there
            window = settings.n_positions
        fits = window is None or window >= self.context
        if cache and not (family and fits):
            raise ConfigError(
                "net.kwargs.cache",
                f"a {settings.model_type} model's step is not written out with a KV cache"
                + (
                    f" (its {'positions' if settings.model_type == 'gpt2' else 'sliding window'}"
                    f", {window}, fewer than the context's {self.context})"
                    if family
                    else ""
                ),
                f"a model of {', '.join(CACHED_FAMILY)} (within its window), or "
                "net.kwargs.cache=false (each step runs the whole context)",
            )
        self.cached = bool(family and fits) if cache is None else bool(cache)
        self.rotary = settings.model_type in ROTARY_FAMILY
        if self.cached and self.rotary:
            self.layers = settings.num_hidden_layers
            self.kv_heads = settings.num_key_value_heads
            self.head_width = self.model.base_model.layers[0].self_attn.head_dim
        elif self.cached:  # GPT-2: every head its own keys and values
            self.layers, self.kv_heads = settings.n_layer, settings.n_head
            self.head_width = settings.n_embd // settings.n_head
        if self.cached:
            self.state_size = self.layers * 2 * self.kv_heads * self.context * self.head_width
        vocabulary = self.model.get_output_embeddings().out_features
        if vocabulary < self.outputs:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"the tokenizer has {self.outputs} ids and the model's output layer {vocabulary}",
                "the model's own tokenizer (env.kwargs.tokenizer=<the model's directory>)",
            )

    def forward(self, observations: torch.Tensor, state: torch.Tensor | None = None):
        if self.cached and self.rotary:
            return self._step(observations, state)
        if self.cached:
            return self._step_gpt2(observations, state)
        return self._whole_context(observations)

    def _newest(self, observations: torch.Tensor):
        """Each context's newest place ``(n,)``, that place as a mask ``(n, c)``, its token
        id ``(n, 1)``, and the places up to it ``(n, 1, 1, c)`` (what attention may see)."""
        ids = observations.long()
        places = torch.arange(self.context, device=ids.device)
        newest = ((ids != 0).sum(dim=1) - 1).clamp(min=0)
        written = places == newest.unsqueeze(1)  # (n, c)
        token = ((ids * written).sum(dim=1, keepdim=True) - 1).clamp(min=0)  # (n, 1)
        seen = (places <= newest.unsqueeze(1)).view(-1, 1, 1, self.context)
        return newest, written, token, seen

    def _attend(self, query, key, value, cache, index, written, seen, scale, groups=1):
        """Attention of the newest token: its key and value written into layer
        ``index``'s cache at its place, the query against every place seen: the mixed
        values ``(n, heads, 1, width)`` and the layer's new cache ``(n, 2, kv, c, w)``."""
        place = written.view(-1, 1, self.context, 1)
        keys = torch.where(place, key, cache[:, index, 0])  # (n, kv, c, w)
        values = torch.where(place, value, cache[:, index, 1])
        scores = query @ keys.repeat_interleave(groups, dim=1).transpose(-1, -2)
        scores = (scores * scale).masked_fill(~seen, float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
        mixed = weights @ values.repeat_interleave(groups, dim=1)
        return mixed, torch.stack((keys, values), dim=1)

    def _step(self, observations: torch.Tensor, state: torch.Tensor):
        """The newest token through every layer, attending to the cached keys and values
        of the tokens before it (its own written in at its place): ``(logits, state)``."""
        newest, written, token, seen = self._newest(observations)
        n = token.shape[0]
        body = self.model.base_model
        x = body.embed_tokens(token)  # (n, 1, d)
        cos, sin = body.rotary_emb(x, newest.unsqueeze(1))  # (n, 1, head width)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        cache = state.reshape(n, self.layers, 2, self.kv_heads, self.context, self.head_width)
        kept = []
        for index, layer in enumerate(body.layers):
            attention = layer.self_attn
            normed = layer.input_layernorm(x)

            def heads(projection, count, normed=normed):
                return projection(normed).view(n, 1, count, self.head_width).transpose(1, 2)

            query = _rotate(heads(attention.q_proj, -1), cos, sin)  # (n, h, 1, w)
            key = _rotate(heads(attention.k_proj, self.kv_heads), cos, sin)
            value = heads(attention.v_proj, self.kv_heads)
            mixed, layer_cache = self._attend(
                query, key, value, cache, index, written, seen, attention.scaling,
                attention.num_key_value_groups,
            )  # fmt: skip
            kept.append(layer_cache)
            x = x + attention.o_proj(mixed.transpose(1, 2).reshape(n, 1, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = self.model.get_output_embeddings()(body.norm(x))[:, 0, : self.outputs]
        return logits, torch.stack(kept, dim=1).reshape(n, -1)

    def _step_gpt2(self, observations: torch.Tensor, state: torch.Tensor):
        """GPT-2's step: :meth:`_step` with learned positions, LayerNorms and ``Conv1D``
        projections (every head its own keys and values)."""
        newest, written, token, seen = self._newest(observations)
        n = token.shape[0]
        body = self.model.base_model
        x = body.wte(token) + body.wpe(newest.unsqueeze(1))  # (n, 1, d)
        cache = state.reshape(n, self.layers, 2, self.kv_heads, self.context, self.head_width)
        kept = []
        for index, block in enumerate(body.h):
            attention = block.attn
            parts = attention.c_attn(block.ln_1(x)).split(attention.split_size, dim=2)
            query, key, value = (
                part.view(n, 1, self.kv_heads, self.head_width).transpose(1, 2) for part in parts
            )
            scale = self.head_width**-0.5 if attention.scale_attn_weights else 1.0
            if attention.scale_attn_by_inverse_layer_idx:
                scale /= index + 1
            mixed, layer_cache = self._attend(query, key, value, cache, index, written, seen, scale)
            kept.append(layer_cache)
            x = x + attention.c_proj(mixed.transpose(1, 2).reshape(n, 1, -1))
            x = x + block.mlp(block.ln_2(x))
        logits = self.model.get_output_embeddings()(body.ln_f(x))[:, 0, : self.outputs]
        return logits, torch.stack(kept, dim=1).reshape(n, -1)

    def _whole_context(self, observations: torch.Tensor) -> torch.Tensor:
        ids = observations.long()
        newest = ((ids != 0).sum(dim=1) - 1).clamp(min=0)  # (n,)
        tokens = (ids - 1).clamp(min=0)  # padding reads as id 0, after the newest token
        # Positions a row each (the model's own default is one row for all: a factored
        # population's hooks see every layer's rows first, GPT-2's position table too).
        positions = torch.arange(tokens.shape[1], device=tokens.device).expand_as(tokens)
        hidden = self.model.base_model(
            input_ids=tokens, position_ids=positions, use_cache=False
        ).last_hidden_state
        index = newest.view(-1, 1, 1).expand(-1, 1, hidden.shape[-1])
        last = torch.gather(hidden, 1, index)  # (n, 1, d): rows first, as every layer sees
        return self.model.get_output_embeddings()(last)[:, 0, : self.outputs]


class PretrainedLMNetwork(ModuleNetwork):
    """:class:`PretrainedLM` as a network (``net.type=pretrained_lm``) for a text task."""

    type_name = "pretrained_lm"
    config_class = PretrainedLMSettings
    reads_token_ids = True

    def __init__(self, input_shape, output_size: int, kwargs: dict | None = None) -> None:
        super().__init__(PretrainedLM, input_shape, output_size, kwargs, "pretrained_lm")

    def resized(self, output_size: int) -> PretrainedLMNetwork:
        return PretrainedLMNetwork(self.input_shape, output_size, self.kwargs)

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> PretrainedLMNetwork:
        require_token_ids(env, "pretrained_lm")
        network = cls(env.obs_shape, env.num_actions, dict(config.kwargs))
        network.check_module("pretrained_lm")
        return network

    def describe(self) -> str:
        model = self.module.model
        step = (
            f"KV cache {4 * self.state_size / 1024:.0f} KiB a sequence"
            if self.state_size
            else "the whole context each step"
        )
        return (
            f"pretrained_lm {type(model).__name__} ({model.config.num_hidden_layers} layers, "
            f"width {model.config.hidden_size}), context {self.input_shape[0]}, {step}, "
            f"{self.num_params:,} params"
        )
