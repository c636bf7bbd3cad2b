"""Multi-layer perceptron over flat per-member parameters (batched with ``bmm``)."""

from __future__ import annotations

import torch

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.core import check_core, core_layer, core_slots, initialize_core
from neuroplug.nets.layers import LINEAR, Layer
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.network import Network, normc_
from neuroplug.nets.virtual_batch_norm import initialize_norm, norm_slots, with_norm


class MLP(Network):
    """``input -> hidden... -> output`` with one activation between layers; with a
    recurrent core, ``input -> hidden... -> GRU -> output``; with ``vbn``, every hidden
    layer's output normalized before its activation (virtual batch norm)."""

    type_name = "mlp"

    def __init__(
        self,
        input_size: int,
        hidden_sizes: list[int],
        output_size: int,
        activation: str,
        core: str = "none",
        core_size: int | None = None,
        vbn: bool = False,
    ) -> None:
        self.input_shape = (input_size,)
        self.vbn = vbn
        self.output_size = output_size
        self.activation_name = activation
        self.core = core
        encoder_width = hidden_sizes[-1] if hidden_sizes else input_size
        self.core_size = (core_size or encoder_width) if core != "none" else 0
        self.encoder_widths = [input_size, *hidden_sizes]
        self.widths = [*self.encoder_widths, *([self.core_size] if self.core_size else [])]
        self.widths.append(output_size)
        self.num_layers = len(self.encoder_widths)  # the linear layers: encoder and output
        shapes: list[tuple[str, tuple[int, ...]]] = []
        layers = []
        for layer, (fan_in, fan_out) in enumerate(
            zip(self.encoder_widths[:-1], self.encoder_widths[1:], strict=True)
        ):
            shapes += [(f"w{layer}", (fan_in, fan_out)), (f"b{layer}", (fan_out,))]
            hidden = Layer(LINEAR, f"w{layer}", f"b{layer}", activation)
            if vbn:
                shapes += norm_slots(f"n{layer}", fan_out)
                hidden = with_norm(hidden, f"n{layer}")
            layers.append(hidden)
        if self.core_size:
            shapes += core_slots(core, encoder_width, self.core_size)
            layers.append(core_layer(core))
        last = self.num_layers - 1
        shapes += [(f"w{last}", (self.widths[-2], output_size)), (f"b{last}", (output_size,))]
        layers.append(Layer(LINEAR, f"w{last}", f"b{last}"))
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
        check_core(config.core, config.core_size)
        return cls(
            env.obs_shape[0],
            hidden,
            env.num_actions,
            config.activation,
            config.core,
            config.core_size,
            bool(config.vbn),
        )

    def resized(self, output_size: int) -> MLP:
        return MLP(
            self.widths[0],
            self.encoder_widths[1:],
            output_size,
            self.activation_name,
            self.core,
            self.core_size or None,
            self.vbn,
        )

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        params = torch.zeros(self.num_params)
        for layer in range(self.num_layers):
            slot = self.layout.slots[f"w{layer}"]
            weight = torch.empty(slot.shape)
            # Small last layer: near-uniform initial actions, as in OpenAI ES.
            normc_(weight, 0.01 if layer == self.num_layers - 1 else 1.0, generator)
            params[slot.offset : slot.offset + slot.size] = weight.flatten()
        if self.core_size:
            initialize_core(params, self.layout, generator)
        initialize_norm(params, self.layout, self.layers)
        return params

    def describe(self) -> str:
        widths = [str(width) for width in self.widths]
        if self.core_size:
            widths[-2] = f"{self.core.upper()}{self.core_size}"
        norm = ", virtual batch norm" if self.vbn else ""
        return f"MLP {'-'.join(widths)} ({self.activation_name}{norm}), {self.num_params:,} params"
