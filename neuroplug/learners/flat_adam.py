"""Adam on a learner's flat parameter buffer, with torch.optim.Adam's arithmetic.

Kingma & Ba (2015), as ``torch.optim.Adam`` computes it (``eps`` added after the second
moment's bias correction, as CleanRL's ``eps=1e-5`` assumes)::

    m <- b1 m + (1 - b1) g;   v <- b2 v + (1 - b2) g^2
    theta <- theta - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)

Four tensor operations on one buffer (:class:`neuroplug.learners.flat_parameters.
FlatParameters`). ``torch.optim.Adam`` does the same arithmetic but wraps every step in
hooks, profiler records and per-group bookkeeping: on a 4.6k-parameter buffer on the
2-core CPU its step took 85 us fused (142 us over the 12 separate tensors) against 51 us
here, out of a CartPole PPO step of ~1.3 ms.
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
    def step(self) -> None:
        """One Adam step on ``flat`` from ``flat.grad``."""
        grad = self.flat.grad
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
        """Restore :meth:`state_dict`, or the ``torch.optim.Adam`` state of a checkpoint
        written before the flat buffer (one entry per tensor, in the model's order)."""
        if "param_groups" in state:
            state = _from_torch_adam(state, self.flat)
        for name in ("exp_avg", "exp_avg_sq"):
            moment = state[name]
            if moment.numel() != self.flat.numel():
                raise ValueError(
                    f"optimiser state for {moment.numel()} parameters; this model trains "
                    f"{self.flat.numel()} (a checkpoint of another network?)"
                )
            getattr(self, name).copy_(moment.reshape(-1))
        self.steps = int(state["steps"])


def _from_torch_adam(state: dict[str, Any], flat: torch.Tensor) -> dict[str, Any]:
    """A ``torch.optim.Adam`` state dict as :meth:`FlatAdam.state_dict`: the moments of its
    tensors joined in order."""
    order = state["param_groups"][0]["params"]
    entries = [state["state"][key] for key in order if key in state["state"]]
    if not entries:  # saved before the first step
        zeros = torch.zeros_like(flat)
        return {"steps": 0, "exp_avg": zeros, "exp_avg_sq": zeros}
    return {
        "steps": int(entries[0]["step"]),
        **{
            moment: torch.cat([entry[moment].reshape(-1) for entry in entries])
            for moment in ("exp_avg", "exp_avg_sq")
        },
    }
