"""Multi-layer perceptron over flat per-member parameters (batched with ``bmm``)."""

from __future__ import annotations

import math

import torch

from neuroplug.config.schema import NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.core import check_core, core_layer, core_slots, initialize_core
from neuroplug.nets.layers import LINEAR, Layer
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.nature_cnn_geometry import fits_nature_cnn
from neuroplug.nets.network import Network, normc_
from neuroplug.nets.virtual_batch_norm import initialize_norm, norm_slots, with_norm


class MLP(Network):
    """``input -> hidden... -> output`` with one activation between layers; with a
    recurrent core, ``input -> hidden... -> GRU -> output``; with ``vbn``, every hidden
    layer's output normalized before its activation (virtual batch norm). An observation of
    several dimensions (an image too small for the Nature CNN: MiniGrid's 7x7 view) is read
    flattened, row-major (the first linear layer reshapes its input; uint8 values are scaled
    to [0, 1]); frames the Nature CNN takes are refused, naming it."""

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
        input_shape: tuple[int, ...] | None = None,
        init: str = "normc",
    ) -> None:
        self.init = init
        """How the linear layers start (:data:`neuroplug.config.schema.INITIALIZATIONS`)."""
        self.input_shape = tuple(input_shape) if input_shape else (input_size,)
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
        if env.is_image and fits_nature_cnn(env.obs_shape):
            # Frames (Atari's 4x84x84): tens of thousands of raw pixels into one dense
            # layer is almost surely a slip; a small image (MiniGrid's) is read flattened.
            raise ConfigError(
                "net.type",
                f"mlp would read {env.task_id}'s frames {env.obs_shape} as "
                f"{math.prod(env.obs_shape):,} raw pixels",
                "nature_cnn or auto (an MLP reads images too small for the Nature CNN)",
            )
        if not env.obs_shape or math.prod(env.obs_shape) < 1:
            raise ConfigError(
                "net.type",
                f"mlp needs observations of at least one number, {env.task_id} observes "
                f"shape {env.obs_shape}",
                "tasks with array observations",
            )
        hidden = [int(width) for width in config.hidden_sizes]
        check_core(config.core, config.core_size)
        return cls(
            math.prod(env.obs_shape),
            hidden,
            env.num_actions,
            # Null is decided by the run's algorithm (build_components); a network built
            # outside a run has none to ask.
            config.activation or "tanh",
            config.core,
            config.core_size,
            bool(config.vbn),
            env.obs_shape,
            config.init or "normc",
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
            self.input_shape,
            self.init,
        )

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        """The linear layers by :attr:`init`: ``normc`` (unit-norm units, the output layer's
        of norm 0.01 for near-uniform initial actions as in OpenAI ES, zero biases) or
        ``uniform`` (``nn.Linear``'s: weights and biases in +-1/sqrt(fan_in)); a core and
        virtual batch norm start as their own modules say."""
        params = torch.zeros(self.num_params)
        for layer in range(self.num_layers):
            weight_slot = self.layout.slots[f"w{layer}"]
            weight = torch.empty(weight_slot.shape)
            if self.init == "uniform":
                bound = 1 / math.sqrt(weight_slot.shape[0])
                weight.uniform_(-bound, bound, generator=generator)
                bias_slot = self.layout.slots[f"b{layer}"]
                bias = torch.empty(bias_slot.shape).uniform_(-bound, bound, generator=generator)
                params[bias_slot.offset : bias_slot.offset + bias_slot.size] = bias
            else:
                normc_(weight, 0.01 if layer == self.num_layers - 1 else 1.0, generator)
            params[weight_slot.offset : weight_slot.offset + weight_slot.size] = weight.flatten()
        if self.core_size:
            initialize_core(self.core, params, self.layout, generator)
        initialize_norm(params, self.layout, self.layers)
        return params

    def describe(self) -> str:
        widths = [str(width) for width in self.widths]
        if self.core_size:
            widths[-2] = f"{self.core.upper()}{self.core_size}"
        norm = ", virtual batch norm" if self.vbn else ""
        flat = ""
        if len(self.input_shape) > 1:
            flat = (
                f" on the flattened {'x'.join(str(size) for size in self.input_shape)} observation"
            )
        return (
            f"MLP {'-'.join(widths)}{flat} ({self.activation_name}{norm}), "
            f"{self.num_params:,} params"
        )
