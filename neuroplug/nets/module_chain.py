"""A module that is only linear layers and element-wise activations, run without
``functional_call``.

``torch.func.functional_call`` under ``vmap`` batches any module over members, but a call
pays a fixed price (swapping the module's parameters, dispatching its layers in Python
through the batching rules), more than a 64-64 MLP's arithmetic on one observation per
member (``benchmarks/results/networks.md``). Most small policies people
write are such a chain, ``nn.Sequential(nn.Linear, nn.Tanh, nn.Linear, ...)``, so
:func:`linear_chain` reads the module's graph once (``torch.fx``) and, when it is a chain,
the module network runs it as the layer table runs an MLP: one batched product per layer
over the members (``baddbmm``) on views of the flat parameters, the activation after it.
Anything else (a residual, a convolution, a branch, an activation with settings) returns
``None`` and keeps the general path, so the lowering changes speed, never what is computed
(the same operations in the same order; ``tests/nets/test_module_network.py`` checks the
two agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import fx, nn

_ACTIVATION_MODULES: dict[type, Callable[[torch.Tensor], torch.Tensor]] = {
    nn.Tanh: torch.tanh,
    nn.ReLU: torch.relu,
    nn.Sigmoid: torch.sigmoid,
}
"""Activation modules without settings, and the function each calls."""

_ACTIVATION_FUNCTIONS: dict[object, Callable[[torch.Tensor], torch.Tensor]] = {
    torch.tanh: torch.tanh,
    torch.relu: torch.relu,
    torch.sigmoid: torch.sigmoid,
    F.relu: torch.relu,
    F.tanh: torch.tanh,
    F.sigmoid: torch.sigmoid,
    "tanh": torch.tanh,  # x.tanh()
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
}
"""Activations written as calls (``torch.tanh(x)``, ``F.relu(x)``, ``x.tanh()``)."""


@dataclass(frozen=True)
class ChainLayer:
    """One linear layer of a chain: its parameter names and what follows it."""

    weight: str
    """The ``(out, in)`` weight's name in the module's ``named_parameters()``."""
    bias: str | None
    activations: tuple[Callable[[torch.Tensor], torch.Tensor], ...] = ()
    """Applied in order to the layer's output."""


def linear_chain(module: nn.Module, prefix: str = "") -> list[ChainLayer] | None:
    """``module``'s forward as a chain of linear layers and activations, or ``None`` when
    it is anything else (or cannot be traced). Names carry ``prefix``."""
    try:
        graph = fx.symbolic_trace(module).graph
    except Exception:  # noqa: BLE001 - any untraceable module keeps the general path
        return None
    modules = dict(module.named_modules())
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    if len(placeholders) != 1:
        return None
    current, chain = placeholders[0], []
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            return chain if chain and node.args == (current,) else None
        if node.args != (current,) or node.kwargs not in ({}, {"inplace": False}):
            return None
        step = _step(node, modules)
        if step is None:
            return None
        if isinstance(step, nn.Linear):
            chain.append(
                ChainLayer(
                    f"{prefix}{node.target}.weight",
                    f"{prefix}{node.target}.bias" if step.bias is not None else None,
                )
            )
        elif chain:
            last = chain[-1]
            chain[-1] = ChainLayer(last.weight, last.bias, (*last.activations, step))
        else:
            return None  # an activation on the observations: not a chain of layers
        current = node
    return None


def _step(node: fx.Node, modules: dict[str, nn.Module]):
    """A linear layer (the module) or an activation (its function), else ``None``."""
    if node.op == "call_module":
        target = modules.get(node.target)
        if type(target) is nn.Linear:
            return target
        return _ACTIVATION_MODULES.get(type(target))
    if node.op in ("call_function", "call_method"):
        try:
            return _ACTIVATION_FUNCTIONS.get(node.target)
        except TypeError:  # an unhashable target
            return None
    return None


def run_chain_members(
    chain: list[ChainLayer], tensors: dict[str, torch.Tensor], inputs: torch.Tensor
) -> torch.Tensor:
    """Member k's chain on its rows: ``tensors`` hold ``(K, *shape)`` stacks, ``inputs``
    is ``(K, b, in)``; returns ``(K, b, out)``."""
    hidden = inputs
    for layer in chain:
        weight = tensors[layer.weight].transpose(1, 2)
        if layer.bias is None:
            hidden = torch.bmm(hidden, weight)
        else:
            hidden = torch.baddbmm(tensors[layer.bias].unsqueeze(1), hidden, weight)
        for activation in layer.activations:
            hidden = activation(hidden)
    return hidden


def run_chain(
    chain: list[ChainLayer], tensors: dict[str, torch.Tensor], inputs: torch.Tensor
) -> torch.Tensor:
    """One set of parameters on ``inputs`` ``(b, in)``."""
    hidden = inputs
    for layer in chain:
        bias = tensors[layer.bias] if layer.bias is not None else None
        hidden = F.linear(hidden, tensors[layer.weight], bias)
        for activation in layer.activations:
            hidden = activation(hidden)
    return hidden
