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

Those families step with a KV cache (:data:`CACHED_FAMILY`): the tokens the cache does not
hold yet (the prompt at an episode's first step, then the newest alone:
:mod:`neuroplug.nets.kv_cache`) through the model's own layers, written out here. Other
models run the whole context.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets import kv_cache
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
    """Rotary positions: ``x`` ``(n, heads, w, d)`` turned by ``cos``/``sin``
    ``(n, 1, w, d)``."""
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
        if self.cached:  # the cache and the count of tokens it holds
            self.state_size = self.layers * 2 * self.kv_heads * self.context * self.head_width + 1
        self.step_window = kv_cache.step_window if self.cached else None
        """The width of a cached step's block (:mod:`neuroplug.nets.kv_cache`)."""
        vocabulary = self.model.get_output_embeddings().out_features
        if vocabulary < self.outputs:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"the tokenizer has {self.outputs} ids and the model's output layer {vocabulary}",
                "the model's own tokenizer (env.kwargs.tokenizer=<the model's directory>)",
            )

    def forward(
        self, observations: torch.Tensor, state: torch.Tensor | None = None,
        window: int | None = None,
    ):  # fmt: skip
        if self.cached and self.rotary:
            return self._step(observations, state, window)
        if self.cached:
            return self._step_gpt2(observations, state, window)
        return self._whole_context(observations)

    def _attend(self, query, key, value, cache, index, step, scale, groups=1):
        """Attention of the step's block (:class:`~neuroplug.nets.kv_cache.Block`): its
        keys and values written into layer ``index``'s cache at their places, each query
        against the places it sees: the mixed values ``(n, heads, w, width)`` and the
        layer's new cache ``(n, 2, kv, c, width)``."""
        keys = kv_cache.write(cache[:, index, 0], key, step.writes)  # (n, kv, c, width)
        values = kv_cache.write(cache[:, index, 1], value, step.writes)
        scores = query @ keys.repeat_interleave(groups, dim=1).transpose(-1, -2)
        scores = (scores * scale).masked_fill(~step.sees.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores.float(), dim=-1).to(query.dtype)
        mixed = weights @ values.repeat_interleave(groups, dim=1)
        return mixed, torch.stack((keys, values), dim=1)

    def _cache(self, state: torch.Tensor) -> torch.Tensor:
        """The state's cache ``(n, layers, 2, kv heads, c, head width)``."""
        shape = (self.layers, 2, self.kv_heads, self.context, self.head_width)
        return state[:, :-1].reshape(len(state), *shape)

    def _step(self, observations: torch.Tensor, state: torch.Tensor, window: int | None):
        """The tokens the cache does not hold (the prompt at the first step, then the
        newest) through every layer, attending to the cached keys and values and to each
        other causally: ``(logits of the newest, state)``."""
        step = kv_cache.block(observations, state, window)
        n, width = step.places.shape
        body = self.model.base_model
        x = body.embed_tokens(step.tokens)  # (n, w, d)
        cos, sin = body.rotary_emb(x, step.places)  # (n, w, head width)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        cache = self._cache(state)
        kept = []
        for index, layer in enumerate(body.layers):
            attention = layer.self_attn
            normed = layer.input_layernorm(x)

            def heads(projection, count, normed=normed):
                return projection(normed).view(n, width, count, self.head_width).transpose(1, 2)

            query = _rotate(heads(attention.q_proj, -1), cos, sin)  # (n, h, w, head width)
            key = _rotate(heads(attention.k_proj, self.kv_heads), cos, sin)
            value = heads(attention.v_proj, self.kv_heads)
            mixed, layer_cache = self._attend(
                query, key, value, cache, index, step, attention.scaling,
                attention.num_key_value_groups,
            )  # fmt: skip
            kept.append(layer_cache)
            x = x + attention.o_proj(mixed.transpose(1, 2).reshape(n, width, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = self.model.get_output_embeddings()(body.norm(x))[:, -1, : self.outputs]
        return logits, torch.cat((torch.stack(kept, dim=1).reshape(n, -1), step.count), dim=1)

    def _step_gpt2(self, observations: torch.Tensor, state: torch.Tensor, window: int | None):
        """GPT-2's step: :meth:`_step` with learned positions, LayerNorms and ``Conv1D``
        projections (every head its own keys and values)."""
        step = kv_cache.block(observations, state, window)
        n, width = step.places.shape
        body = self.model.base_model
        x = body.wte(step.tokens) + body.wpe(step.places)  # (n, w, d)
        cache = self._cache(state)
        kept = []
        for index, block in enumerate(body.h):
            attention = block.attn
            parts = attention.c_attn(block.ln_1(x)).split(attention.split_size, dim=2)
            query, key, value = (
                part.view(n, width, self.kv_heads, self.head_width).transpose(1, 2)
                for part in parts
            )
            scale = self.head_width**-0.5 if attention.scale_attn_weights else 1.0
            if attention.scale_attn_by_inverse_layer_idx:
                scale /= index + 1
            mixed, layer_cache = self._attend(query, key, value, cache, index, step, scale)
            kept.append(layer_cache)
            x = x + attention.c_proj(mixed.transpose(1, 2).reshape(n, width, -1))
            x = x + block.mlp(block.ln_2(x))
        logits = self.model.get_output_embeddings()(body.ln_f(x))[:, -1, : self.outputs]
        return logits, torch.cat((torch.stack(kept, dim=1).reshape(n, -1), step.count), dim=1)

    def _whole_context(self, observations: torch.Tensor) -> torch.Tensor:
        ids = observations.long()
        newest = kv_cache.newest_place(ids)  # (n,)
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
