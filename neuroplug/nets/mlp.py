"""Multi-layer perceptron over flat per-member parameters (batched with ``bmm``)."""

from __future__ import annotations

import torch

from neuroplug.nets.layout import ParameterLayout, Params
from neuroplug.nets.network import Network, normc_

ACTIVATIONS = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "elu": torch.nn.functional.elu,
    "sigmoid": torch.sigmoid,
    "identity": lambda x: x,
}


class MLP(Network):
    """``input -> hidden... -> output`` with one activation between layers."""

    def __init__(
        self, input_size: int, hidden_sizes: list[int], output_size: int, activation: str
    ) -> None:
        self.input_shape = (input_size,)
        self.output_size = output_size
        self.activation_name = activation
        self.activation = ACTIVATIONS[activation]
        self.widths = [input_size, *hidden_sizes, output_size]
        shapes: list[tuple[str, tuple[int, ...]]] = []
        for layer, (fan_in, fan_out) in enumerate(
            zip(self.widths[:-1], self.widths[1:], strict=True)
        ):
            shapes += [(f"w{layer}", (fan_in, fan_out)), (f"b{layer}", (fan_out,))]
        self.layout = ParameterLayout(shapes)
        self.num_layers = len(self.widths) - 1

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        params = torch.zeros(self.num_params)
        for layer in range(self.num_layers):
            slot = self.layout.slots[f"w{layer}"]
            weight = torch.empty(slot.shape)
            # Small last layer: near-uniform initial actions, as in OpenAI ES.
            normc_(weight, 0.01 if layer == self.num_layers - 1 else 1.0, generator)
            params[slot.offset : slot.offset + slot.size] = weight.flatten()
        return params

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        hidden = inputs.reshape(len(inputs), 1, self.widths[0]).to(params.dtype)
        views = self.layout.views(params)
        for layer in range(self.num_layers):
            hidden = torch.baddbmm(views[f"b{layer}"].unsqueeze(1), hidden, views[f"w{layer}"])
            if layer < self.num_layers - 1:
                hidden = self.activation(hidden)
        return hidden.squeeze(1)

    def forward_single(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        hidden = inputs.reshape(len(inputs), -1).to(self.layout.tensor(params, "w0").dtype)
        for layer in range(self.num_layers):
            weight = self.layout.tensor(params, f"w{layer}")
            bias = self.layout.tensor(params, f"b{layer}")
            hidden = torch.addmm(bias, hidden, weight)
            if layer < self.num_layers - 1:
                hidden = self.activation(hidden)
        return hidden

    def describe(self) -> str:
        sizes = "-".join(str(width) for width in self.widths)
        return f"MLP {sizes} ({self.activation_name}), {self.num_params:,} params"
