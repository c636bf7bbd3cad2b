"""Multi-layer perceptron over flat per-member parameters (batched with ``bmm``)."""

from __future__ import annotations

import torch

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.layers import LINEAR, Layer
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.network import Network, normc_


class MLP(Network):
    """``input -> hidden... -> output`` with one activation between layers."""

    type_name = "mlp"

    def __init__(
        self, input_size: int, hidden_sizes: list[int], output_size: int, activation: str
    ) -> None:
        self.input_shape = (input_size,)
        self.output_size = output_size
        self.activation_name = activation
        self.widths = [input_size, *hidden_sizes, output_size]
        self.num_layers = len(self.widths) - 1
        shapes: list[tuple[str, tuple[int, ...]]] = []
        layers = []
        for layer, (fan_in, fan_out) in enumerate(
            zip(self.widths[:-1], self.widths[1:], strict=True)
        ):
            shapes += [(f"w{layer}", (fan_in, fan_out)), (f"b{layer}", (fan_out,))]
            last = layer == self.num_layers - 1
            layers.append(
                Layer(LINEAR, f"w{layer}", f"b{layer}", "identity" if last else activation)
            )
        self.layout = ParameterLayout(shapes)
        self.layers = tuple(layers)

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> MLP:
        if env.is_image:
            raise ConfigError(
                "net.type",
                f"mlp cannot take image observations of shape {env.obs_shape} from {env.task_id}",
                "nature_cnn or auto",
            )
        if len(env.obs_shape) != 1:
            raise ConfigError(
                "net.type",
                f"mlp needs flat vector observations, {env.task_id} observes shape {env.obs_shape}",
                "tasks with 1-D observations",
            )
        hidden = [int(width) for width in config.hidden_sizes]
        return cls(env.obs_shape[0], hidden, env.num_actions, config.activation)

    def resized(self, output_size: int) -> MLP:
        return MLP(self.widths[0], self.widths[1:-1], output_size, self.activation_name)

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        params = torch.zeros(self.num_params)
        for layer in range(self.num_layers):
            slot = self.layout.slots[f"w{layer}"]
            weight = torch.empty(slot.shape)
            # Small last layer: near-uniform initial actions, as in OpenAI ES.
            normc_(weight, 0.01 if layer == self.num_layers - 1 else 1.0, generator)
            params[slot.offset : slot.offset + slot.size] = weight.flatten()
        return params

    def describe(self) -> str:
        sizes = "-".join(str(width) for width in self.widths)
        return f"MLP {sizes} ({self.activation_name}), {self.num_params:,} params"
