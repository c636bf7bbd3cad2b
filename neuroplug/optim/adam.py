"""Adam without ``torch.optim``'s per-step bookkeeping: :class:`FlatAdam` (one flat vector,
for ES and the on-policy learners) and :class:`FusedAdam` (the off-policy learners' tensors,
through PyTorch's fused kernel).

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


@torch.no_grad()
def adam_step(
    settings: FlatAdam,
    flat: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    steps: int | torch.Tensor,
    learning_rate: float | torch.Tensor | None = None,
) -> None:
    """The arithmetic of one Adam step (the module docstring's), in place, with
    ``settings``' betas and eps: on one flat vector (``steps`` and ``learning_rate``
    numbers), or on K stacked rows at once (``(K, 1)`` tensors: PBT's members, each at its
    own step count and learning rate). ``learning_rate`` defaults to ``settings``'."""
    rate = settings.learning_rate if learning_rate is None else learning_rate
    exp_avg.lerp_(grad, 1 - settings.beta1)
    exp_avg_sq.mul_(settings.beta2).addcmul_(grad, grad, value=1 - settings.beta2)
    if isinstance(steps, torch.Tensor):
        step_size = rate / (1 - settings.beta1**steps)
        correction = torch.sqrt(1 - settings.beta2**steps)
    else:
        step_size = rate / (1 - settings.beta1**steps)
        correction = math.sqrt(1 - settings.beta2**steps)
    denominator = (exp_avg_sq.sqrt() / correction).add_(settings.eps)
    if isinstance(step_size, torch.Tensor):
        flat.sub_(step_size * exp_avg / denominator)
    else:
        flat.addcdiv_(exp_avg, denominator, value=-step_size)


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
        adam_step(self, self.flat, grad, self.exp_avg, self.exp_avg_sq, self.steps)

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
                "exp_avg_sq (a checkpoint of another optimizer?): start a new run"
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


class FusedAdam:
    """``torch.optim.Adam(params, lr, fused=True)`` stepped by one call of its fused kernel.

    The same kernel (``torch._fused_adam_``), the same arguments and the same state, so the
    numbers are bit-identical to ``torch.optim.Adam``'s fused step and the two read each
    other's ``state_dict``. What it leaves out is the wrapper: hooks, profiler records,
    grouping the tensors by device and dtype, lazy state, which on a 256-256 network cost
    as long as the arithmetic (``benchmarks/results/design_measurements.md``). The off-policy learners step
    two or three optimizers per env step, DQN one per gradient step.

    Supports what those learners use: one parameter group (``param_groups[0]["lr"]`` may be
    set between steps), parameters whose ``grad`` is None are skipped (and keep no state
    until they first have one), ``zero_grad(set_to_none=True)``.
    """

    def __init__(
        self,
        params,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params: list[torch.Tensor] = list(params)
        self.param_groups = [
            {
                "params": self.params,
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": 0.0,
                "amsgrad": False,
                "maximize": False,
                "fused": True,
            }
        ]
        self.state: dict[int, dict[str, torch.Tensor]] = {}
        """Per parameter index: ``step`` (a float32 scalar tensor), ``exp_avg``,
        ``exp_avg_sq``; created at the parameter's first step, as torch.optim does."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop (or zero) every parameter's gradient."""
        for param in self.params:
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad.zero_()

    def _state_of(self, index: int) -> dict[str, torch.Tensor]:
        state = self.state.get(index)
        if state is None:
            param = self.params[index]
            state = {
                "step": torch.zeros((), dtype=torch.float32, device=param.device),
                "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
            }
            self.state[index] = state
        return state

    @torch.no_grad()
    def step(self) -> None:
        """One Adam step of every parameter that has a gradient."""
        group = self.param_groups[0]
        params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
        for index, param in enumerate(self.params):
            if param.grad is None:
                continue
            state = self._state_of(index)
            params.append(param)
            grads.append(param.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            return
        torch._foreach_add_(steps, 1)
        beta1, beta2 = group["betas"]
        torch._fused_adam_(
            params, grads, exp_avgs, exp_avg_sqs, [], steps,
            lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=0.0, eps=group["eps"],
            amsgrad=False, maximize=False,
        )  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.Adam``'s format: ``state`` by parameter index, ``param_groups``."""
        group = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        group["params"] = list(range(len(self.params)))
        state = {
            index: {name: tensor.clone() for name, tensor in entry.items()}
            for index, entry in self.state.items()
        }
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (or ``torch.optim.Adam``'s)."""
        groups = state["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            raise ValueError(
                f"optimizer state for {sum(len(group['params']) for group in groups)} "
                f"tensors in {len(groups)} group(s); this optimizer steps {len(self.params)} "
                "in one (a checkpoint of another network?)"
            )
        for key in ("lr", "betas", "eps"):
            self.param_groups[0][key] = groups[0][key]
        self.state = {}
        for index, entry in state["state"].items():
            param = self.params[int(index)]
            self.state[int(index)] = {
                "step": entry["step"].detach().to(param.device, torch.float32).clone(),
                "exp_avg": entry["exp_avg"].detach().to(param.device).clone(),
                "exp_avg_sq": entry["exp_avg_sq"].detach().to(param.device).clone(),
            }
