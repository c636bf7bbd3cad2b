"""Adam on a flat parameter vector, with state that checkpoints exactly."""

from __future__ import annotations

from typing import Any

import torch


class Adam:
    """Adam (Kingma & Ba 2015) that returns the step instead of owning the parameters."""

    def __init__(
        self,
        size: int,
        learning_rate: float,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
    ) -> None:
        self.learning_rate = learning_rate
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.m = torch.zeros(size, dtype=torch.float32)
        self.v = torch.zeros(size, dtype=torch.float32)
        self.t = 0

    def step(self, gradient: torch.Tensor) -> torch.Tensor:
        """The update to *subtract* from the parameters for this ``gradient``."""
        self.t += 1
        self.m.mul_(self.beta1).add_(gradient, alpha=1 - self.beta1)
        self.v.mul_(self.beta2).addcmul_(gradient, gradient, value=1 - self.beta2)
        step_size = self.learning_rate * (1 - self.beta2**self.t) ** 0.5 / (1 - self.beta1**self.t)
        return step_size * self.m / (self.v.sqrt() + self.epsilon)

    def state_dict(self) -> dict[str, Any]:
        """Moments and step count."""
        return {"m": self.m.clone(), "v": self.v.clone(), "t": self.t}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore moments and step count."""
        self.m, self.v, self.t = state["m"].clone(), state["v"].clone(), int(state["t"])
