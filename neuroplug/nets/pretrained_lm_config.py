"""The settings of ``net.type=pretrained_lm`` (its ``net.kwargs``), in a module that
imports no torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from neuroplug.config.schema import CheckedConfig
from neuroplug.errors import require


@dataclass
class PretrainedLMSettings(CheckedConfig):
    """A Hugging Face ``transformers`` causal language model, loaded or built."""

    pretrained: str = ""
    """A local directory the model was saved in (``save_pretrained``): its weights are the
    population's start. Nothing is downloaded."""
    config: dict[str, Any] = field(default_factory=dict)
    """Or a model built from a config, freshly initialised: ``model_type`` (``qwen2``,
    ``llama``, ...) and its settings (``hidden_size``, ``num_hidden_layers``, ...)."""

    cache: bool | None = None
    """Step with a KV cache (the newest token only, the earlier ones' keys and values kept
    as the state): the Llama family (llama, qwen2, mistral) does by default; ``false`` runs
    the whole context every step; ``true`` refuses a model it cannot cache."""

    def check(self) -> None:
        super().check()
        require(
            bool(self.pretrained) != bool(self.config),
            "net.kwargs.pretrained",
            "both a directory and a config given"
            if self.pretrained
            else "neither a directory nor a config given",
            "net.kwargs.pretrained=<a directory of save_pretrained>, or "
            "net.kwargs.config={model_type: qwen2, ...}",
        )
        require(
            not self.config or "model_type" in self.config,
            "net.kwargs.config.model_type",
            "missing",
            "a transformers model type: llama, qwen2, mistral, ...",
        )
