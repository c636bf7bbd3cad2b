"""The settings of ``net.type=transformer`` and ``net.type=causal_lm`` (their
``net.kwargs``: one shape of transformer), in a module that imports no torch: the command
line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.config.schema import CheckedConfig
from neuroplug.errors import require


@dataclass
class TransformerSettings(CheckedConfig):
    """A small pre-norm transformer's shape: over a vector observation's entries as
    tokens (``transformer``), or over a text task's tokens with a KV cache (``causal_lm``)."""

    d_model: int = 64
    """Width of every token."""
    heads: int = 4
    """Attention heads (they divide ``d_model``)."""
    layers: int = 2
    """Blocks of self-attention and MLP."""
    mlp_ratio: int = 4
    """The MLP's hidden width over ``d_model``."""

    def check(self) -> None:
        super().check()
        for name in ("d_model", "heads", "layers", "mlp_ratio"):
            value = getattr(self, name)
            require(value >= 1, f"net.kwargs.{name}", f"got {value}", "an integer >= 1")
        require(
            self.d_model % self.heads == 0,
            "net.kwargs.heads",
            f"{self.heads} heads do not divide d_model={self.d_model}",
            "a divisor of net.kwargs.d_model",
        )
