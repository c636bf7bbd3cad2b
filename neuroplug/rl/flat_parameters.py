"""A model's trainable tensors in one buffer, and their gradients in another.

Each parameter stays a tensor of its own shape (autograd and the written-out backward see
the same per-layer tensors, the checkpoint the same names), but its values are a view into
one flat buffer and its gradient a view into another. The optimizer then steps one tensor,
the gradient clip reads one norm, and zeroing is one fill: on a small actor-critic the
per-tensor versions of those three cost a sizeable part of a PPO step.
"""

from __future__ import annotations

import torch
from torch import nn


def clip_grad_norm(
    grad: torch.Tensor, max_norm: float | torch.Tensor, dim: int | None = None
) -> torch.Tensor:
    """Scale ``grad`` in place to an L2 norm of at most ``max_norm`` (``torch.nn.utils.
    clip_grad_norm_``'s rule, in two ops where the general one takes a dozen): the whole
    tensor, or with ``dim`` each row of a stack (a ``(K, 1)`` ``max_norm`` per row).
    Returns the norm(s) before clipping."""
    if dim is None:
        norm = torch.linalg.vector_norm(grad)
    else:
        norm = torch.linalg.vector_norm(grad, dim=dim, keepdim=True)
    grad.mul_(torch.clamp(max_norm / (norm + 1e-6), max=1.0))
    return norm


class FlatParameters:
    """``parameters`` re-seated as views of one buffer (:attr:`flat`, whose ``grad`` is the
    buffer their gradients are views of)."""

    def __init__(self, parameters: list[nn.Parameter]) -> None:
        if not parameters:
            raise ValueError("nothing to train: the model has no trainable parameters")
        first = parameters[0]
        if any(p.dtype != first.dtype or p.device != first.device for p in parameters):
            raise ValueError("flat parameters need one dtype and one device for every tensor")
        self.parameters = parameters
        self.sizes = [p.numel() for p in parameters]
        values = torch.empty(sum(self.sizes), dtype=first.dtype, device=first.device)
        grads = torch.zeros_like(values)
        with torch.no_grad():
            for parameter, value, grad in zip(
                parameters, values.split(self.sizes), grads.split(self.sizes), strict=True
            ):
                value.copy_(parameter.reshape(-1))
                parameter.data = value.view_as(parameter)
                parameter.grad = grad.view_as(parameter)
        self.flat = nn.Parameter(values)
        """Every parameter's values, in order; its ``grad`` holds every gradient."""
        self.flat.grad = grads

    def zero_grad(self) -> None:
        """Zero every gradient in one call (autograd then adds into the views in place)."""
        self.flat.grad.zero_()

    def clip_grad_norm_(self, max_norm: float) -> torch.Tensor:
        """Scale the gradients to a global L2 norm of at most ``max_norm``, as
        ``torch.nn.utils.clip_grad_norm_`` does; returns the norm before clipping."""
        return clip_grad_norm(self.flat.grad, max_norm)

    def check_seated(self) -> None:
        """Raise if a parameter or its gradient no longer lives in the buffers (the model was
        moved, or its gradients set to None, after the buffers were built): the optimizer
        would then step tensors the model no longer reads."""
        start = self.flat.data_ptr()
        grad_start = self.flat.grad.data_ptr()
        offset = 0
        item = self.flat.element_size()
        for parameter, size in zip(self.parameters, self.sizes, strict=True):
            if (
                parameter.data_ptr() != start + offset * item
                or parameter.grad is None
                or parameter.grad.data_ptr() != grad_start + offset * item
            ):
                raise RuntimeError(
                    "a trained parameter left the flat buffers (was the model moved with "
                    ".to(), or its gradients set to None, after its update was built?): "
                    "build the update after placing the model, and zero gradients through it"
                )
            offset += size
