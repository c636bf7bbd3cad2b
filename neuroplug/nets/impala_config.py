"""The settings of ``net.type=impala`` (its ``net.kwargs``), in a module that imports no
torch: the command line checks them before anything is built."""

from __future__ import annotations

from dataclasses import dataclass, field

from neuroplug.config.schema import CheckedConfig
from neuroplug.errors import require


@dataclass
class ImpalaSettings(CheckedConfig):
    """The IMPALA ResNet's widths (Espeholt et al. 2018's defaults)."""

    channels: list[int] = field(default_factory=lambda: [16, 32, 32])
    """Channels of each stack (a convolution, max-pooling, two residual blocks)."""
    hidden: int = 256
    """Units of the fully connected layer after the stacks."""

    def check(self) -> None:
        super().check()
        require(
            len(self.channels) >= 1 and all(int(width) >= 1 for width in self.channels),
            "net.kwargs.channels",
            f"got {self.channels}",
            "a list of positive channel counts, one per stack",
        )
        require(self.hidden >= 1, "net.kwargs.hidden", f"got {self.hidden}", "an integer >= 1")
