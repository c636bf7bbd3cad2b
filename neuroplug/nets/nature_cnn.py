"""The Nature-DQN CNN (Mnih et al. 2015) over flat per-member parameters.

Its forward pass is its layer table (:mod:`neuroplug.nets.layers`, where the population's
grouped convolutions and their thread-count-invariant CPU kernels are explained).
"""

from __future__ import annotations

import math

import torch

from neuroplug.config.schema import NetConfig
from neuroplug.envs.measurements import measurement_rows
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.core import check_core, core_layer, core_slots, initialize_core
from neuroplug.nets.layers import CONV2D, LINEAR, Layer
from neuroplug.nets.layout import ParameterLayout
from neuroplug.nets.nature_cnn_geometry import CONV_LAYERS, conv_output_size
from neuroplug.nets.network import Network
from neuroplug.nets.virtual_batch_norm import initialize_norm, norm_slots, with_norm

HIDDEN_SIZE = 512


class NatureCNN(Network):
    """Three convolutions (ReLU), a 512-unit ReLU layer and a linear output; with a
    recurrent core (``net.core=gru``), the core between the 512 units and the output; with
    ``vbn``, the convolutions' and the 512 units' outputs normalized before their ReLU
    (virtual batch norm, as OpenAI's ES on Atari); with ``measurements`` (numbers packed
    below the pixels, :mod:`neuroplug.envs.measurements`), the convolutions see the pixels
    and the 512 units their features followed by the measurements."""

    type_name = "nature_cnn"
    critic_shares_trunk = True
    reads_measurements = True

    def __init__(
        self,
        input_shape: tuple[int, int, int],
        output_size: int,
        padding: str = "valid",
        core: str = "none",
        core_size: int | None = None,
        vbn: bool = False,
        measurements: int = 0,
    ) -> None:
        self.input_shape = tuple(input_shape)
        self.measurements = measurements
        self.vbn = vbn
        self.output_size = output_size
        self.padding = padding
        self.core = core
        self.core_size = (core_size or HIDDEN_SIZE) if core != "none" else 0
        channels, height, width = input_shape
        # The rows below the pixels hold the measurements (neuroplug.envs.measurements).
        height -= measurement_rows(measurements, width)
        shapes: list[tuple[str, tuple[int, ...]]] = []
        layers = []
        for layer, (out_channels, kernel, stride) in enumerate(CONV_LAYERS):
            shapes += [
                (f"conv{layer}.w", (out_channels, channels, kernel, kernel)),
                (f"conv{layer}.b", (out_channels,)),
            ]
            pads = self._pads(height, width, kernel, stride)
            conv = Layer(CONV2D, f"conv{layer}.w", f"conv{layer}.b", "relu", stride, pads)
            if vbn:
                shapes += norm_slots(f"conv{layer}", out_channels)
                conv = with_norm(conv, f"conv{layer}")
            layers.append(conv)
            height = conv_output_size(height, kernel, stride, padding)
            width = conv_output_size(width, kernel, stride, padding)
            channels = out_channels
        if height < 1 or width < 1:
            raise ValueError(
                f"observations of shape {input_shape} are too small for the Nature CNN"
            )
        self.flat_size = channels * height * width
        fc_inputs = self.flat_size + measurements
        shapes += [("fc.w", (fc_inputs, HIDDEN_SIZE)), ("fc.b", (HIDDEN_SIZE,))]
        fc = Layer(LINEAR, "fc.w", "fc.b", "relu", measurements=measurements)
        if vbn:
            shapes += norm_slots("fc", HIDDEN_SIZE)
            fc = with_norm(fc, "fc")
        layers.append(fc)
        features = HIDDEN_SIZE
        if self.core_size:
            shapes += core_slots(core, HIDDEN_SIZE, self.core_size)
            layers.append(core_layer(core))
            features = self.core_size
        shapes += [("out.w", (features, output_size)), ("out.b", (output_size,))]
        layers.append(Layer(LINEAR, "out.w", "out.b"))
        self.layout = ParameterLayout(shapes)
        self.layers = tuple(layers)

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> NatureCNN:
        if not env.is_image:
            raise ConfigError(
                "net.type",
                f"nature_cnn needs image observations (channels, height, width) but "
                f"{env.task_id} observes shape {env.obs_shape}",
                "mlp or auto for vector observations",
            )
        check_core(config.core, config.core_size)
        if env.measurements and config.vbn:
            raise ConfigError(
                "net.vbn",
                f"{env.task_id} observes {env.measurements} measurements beside its frames, "
                "and virtual batch norm normalizes the pixels' layers only",
                "net.vbn=false",
            )
        try:
            return cls(
                env.obs_shape,
                env.num_actions,
                config.padding,
                config.core,
                config.core_size,
                bool(config.vbn),
                env.measurements,
            )
        except ValueError as error:
            raise ConfigError(
                "net.type",
                str(error),
                "mlp or auto (an MLP reads a small image flattened), net.padding=same, or "
                "larger frames",
            ) from error

    def resized(self, output_size: int) -> NatureCNN:
        return NatureCNN(
            self.input_shape,
            output_size,
            self.padding,
            self.core,
            self.core_size or None,
            self.vbn,
            self.measurements,
        )

    def _pads(self, height: int, width: int, kernel: int, stride: int) -> tuple[int, int, int, int]:
        """TensorFlow-style SAME padding (left, right, top, bottom); zeros for VALID."""
        if self.padding == "valid":
            return (0, 0, 0, 0)
        pad_h = max((math.ceil(height / stride) - 1) * stride + kernel - height, 0)
        pad_w = max((math.ceil(width / stride) - 1) * stride + kernel - width, 0)
        return (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2)

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        params = torch.zeros(self.num_params)
        for name, slot in self.layout.slots.items():
            if not name.endswith(".w") or name.startswith("core."):
                continue
            fan_in = math.prod(slot.shape[1:]) if name.startswith("conv") else slot.shape[0]
            # He-normal keeps ReLU activations at unit scale; a small output layer keeps
            # initial action preferences near uniform.
            std = 0.01 if name == "out.w" else math.sqrt(2.0 / fan_in)
            values = torch.randn(slot.shape, generator=generator) * std
            params[slot.offset : slot.offset + slot.size] = values.flatten()
        if self.core_size:
            initialize_core(self.core, params, self.layout, generator)
        initialize_norm(params, self.layout, self.layers)
        return params

    def describe(self) -> str:
        core = f", {self.core.upper()}{self.core_size} core" if self.core_size else ""
        core += ", virtual batch norm" if self.vbn else ""
        core += (
            f", {self.measurements} measurements joining its 512 units" if self.measurements else ""
        )
        return (
            f"Nature CNN ({self.padding} padding{core}) on {self.input_shape}, "
            f"{self.num_params:,} params"
        )
