"""Adam on one flat parameter vector: the one Adam of neuroplug, for ES and the learners.

Kingma & Ba (2015), as ``torch.optim.Adam`` computes it (``eps`` added after the second
moment's bias correction, as CleanRL's ``eps=1e-5`` assumes)::

    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
    theta <- theta - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)

Four tensor operations on one buffer: a learner's trained tensors are views of it
(:class:`neuroplug.rl.flat_parameters.FlatParameters`), an ES center is one already.
``torch.optim.Adam`` does the same arithmetic but wraps every step in hooks, profiler
records and per-group bookkeeping, which cost more than the arithmetic on small networks.
OpenAI's ES code adds ``eps`` before the bias correction instead; with ``eps = 1e-8`` the
two differ only where the second moment is ~1e-16.
"""

from __future__ import annotations

import math
from typing import Any

import torch


class FlatAdam:
    """Adam stepping the tensor ``flat`` by its ``grad``."""

    def __init__(
        self,
        flat: torch.Tensor,
        learning_rate: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.flat = flat
        self.learning_rate = learning_rate
        """Set freely between steps (a schedule does)."""
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.exp_avg = torch.zeros_like(flat, memory_format=torch.contiguous_format)
        self.exp_avg_sq = torch.zeros_like(self.exp_avg)
        self.steps = 0

    @torch.no_grad()
    def step(self, gradient: torch.Tensor | None = None) -> None:
        """One Adam step on ``flat`` from ``gradient`` (default: ``flat.grad``)."""
        grad = self.flat.grad if gradient is None else gradient
        self.steps += 1
        self.exp_avg.lerp_(grad, 1 - self.beta1)
        self.exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        step_size = self.learning_rate / (1 - self.beta1**self.steps)
        second_moment_correction = math.sqrt(1 - self.beta2**self.steps)
        denominator = (self.exp_avg_sq.sqrt() / second_moment_correction).add_(self.eps)
        self.flat.addcdiv_(self.exp_avg, denominator, value=-step_size)

    def state_dict(self) -> dict[str, Any]:
        """Moments and the step count."""
        return {
            "steps": self.steps,
            "exp_avg": self.exp_avg.clone(),
            "exp_avg_sq": self.exp_avg_sq.clone(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (a state of another size, or of another optimizer, is
        refused)."""
        missing = {"steps", "exp_avg", "exp_avg_sq"} - set(state)
        if missing:
            raise ValueError(
                f"optimizer state with keys {sorted(state)}, not this Adam's steps, exp_avg, "
                "exp_avg_sq (a checkpoint of an older neuroplug?): start a new run"
            )
        for name in ("exp_avg", "exp_avg_sq"):
            moment = state[name]
            if moment.numel() != self.flat.numel():
                raise ValueError(
                    f"optimizer state for {moment.numel()} parameters; this model trains "
                    f"{self.flat.numel()} (a checkpoint of another network?)"
                )
            getattr(self, name).copy_(moment.reshape(-1))
        self.steps = int(state["steps"])
