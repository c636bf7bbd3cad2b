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
Qwen2, Mistral: ``nn.Linear``, ``nn.Embedding`` and their RMSNorm) never have a member's
matrices built (``neuroplug_backends.module_lowrank``). A population's checkpoint is the
model and seeds.

Not yet: the KV cache (each step runs the whole context again: cheap for the short
contexts of these tasks), and models whose layers are other kinds (GPT-2's ``Conv1D``
runs materialised).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
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


class PretrainedLM(nn.Module):
    """A ``transformers`` causal LM as a whole policy: the logits of each context's newest
    token, over the first ``outputs`` token ids (the env's tokenizer's)."""

    def __init__(
        self, observation_shape: tuple[int, ...], outputs: int, pretrained: str = "",
        config: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.model = load_model(pretrained, config)
        self.outputs = int(outputs)
        vocabulary = self.model.get_output_embeddings().out_features
        if vocabulary < self.outputs:
            raise ConfigError(
                "env.kwargs.tokenizer",
                f"the tokenizer has {self.outputs} ids and the model's output layer {vocabulary}",
                "the model's own tokenizer (env.kwargs.tokenizer=<the model's directory>)",
            )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        ids = observations.long()
        newest = ((ids != 0).sum(dim=1) - 1).clamp(min=0)  # (n,)
        tokens = (ids - 1).clamp(min=0)  # padding reads as id 0, after the newest token
        hidden = self.model.base_model(input_ids=tokens, use_cache=False).last_hidden_state
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
        ids = ((0.0, float(env.num_actions)),) * env.obs_shape[0] if env.obs_shape else ()
        if not (env.discrete and len(env.obs_shape) == 1 and env.obs_bounds == ids):
            raise ConfigError(
                "net.type",
                f"pretrained_lm reads token ids and writes tokens (a text task: env=addition, "
                f"sorting, countdown), and {env.task_id} observes no token ids",
                "a text task, or mlp or transformer for this env",
            )
        network = cls(env.obs_shape, env.num_actions, dict(config.kwargs))
        network.check_module("pretrained_lm")
        return network

    def describe(self) -> str:
        model = self.module.model
        return (
            f"pretrained_lm {type(model).__name__} ({model.config.num_hidden_layers} layers, "
            f"width {model.config.hidden_size}), context {self.input_shape[0]}, "
            f"{self.num_params:,} params"
        )
