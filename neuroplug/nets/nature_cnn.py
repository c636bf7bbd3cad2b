"""The Nature-DQN CNN (Mnih et al. 2015) over flat per-member parameters.

Different members' convolutions run as one grouped convolution: the population's inputs
are stacked along channels and each member is one group. The large fully connected layer
is one batched matrix multiply. uint8 frames are scaled to [0, 1] here.

On CPU the population's convolutions use ATen's native kernels, not oneDNN's: oneDNN's
grouped convolution changes its last bits with the number of threads, and the run changes
PyTorch's thread count with the machine's load (:class:`neuroplug.devices.TorchThreads`).
The native kernels give the same bits at any count, at about oneDNN's speed on one thread
and 0.9x on two (measured on the 2-core CPU, populations of 1-64).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from neuroplug.nets.layout import ParameterLayout, Params
from neuroplug.nets.network import Network

CONV_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
"""(channels, kernel, stride) of the three convolutions."""
HIDDEN_SIZE = 512


@contextlib.contextmanager
def onednn_convolutions(device: torch.device, enabled: bool) -> Iterator[None]:
    """CPU convolutions inside run in oneDNN (``enabled``) or in ATen's native kernels;
    on other devices, nothing changes."""
    if device.type != "cpu":
        yield
        return
    before = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(enabled)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(before)


def thread_count_invariant_convolutions(device: torch.device):
    """ATen's native CPU convolutions inside: the same bits at any thread count (see the
    module's docstring)."""
    return onednn_convolutions(device, enabled=False)


def _conv_output_size(size: int, kernel: int, stride: int, padding: str) -> int:
    if padding == "same":
        return math.ceil(size / stride)
    return (size - kernel) // stride + 1


class NatureCNN(Network):
    """Three convolutions (ReLU), a 512-unit ReLU layer and a linear output."""

    def __init__(
        self, input_shape: tuple[int, int, int], output_size: int, padding: str = "valid"
    ) -> None:
        self.input_shape = tuple(input_shape)
        self.output_size = output_size
        self.padding = padding
        channels, height, width = input_shape
        shapes: list[tuple[str, tuple[int, ...]]] = []
        self.paddings: list[tuple[int, int, int, int]] = []
        for layer, (out_channels, kernel, stride) in enumerate(CONV_LAYERS):
            shapes += [
                (f"conv{layer}.w", (out_channels, channels, kernel, kernel)),
                (f"conv{layer}.b", (out_channels,)),
            ]
            self.paddings.append(self._pads(height, width, kernel, stride))
            height = _conv_output_size(height, kernel, stride, padding)
            width = _conv_output_size(width, kernel, stride, padding)
            channels = out_channels
        if height < 1 or width < 1:
            raise ValueError(
                f"observations of shape {input_shape} are too small for the Nature CNN"
            )
        self.flat_size = channels * height * width
        shapes += [("fc.w", (self.flat_size, HIDDEN_SIZE)), ("fc.b", (HIDDEN_SIZE,))]
        shapes += [("out.w", (HIDDEN_SIZE, output_size)), ("out.b", (output_size,))]
        self.layout = ParameterLayout(shapes)

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
            if not name.endswith(".w"):
                continue
            fan_in = math.prod(slot.shape[1:]) if name.startswith("conv") else slot.shape[0]
            # He-normal keeps ReLU activations at unit scale; a small output layer keeps
            # initial action preferences near uniform.
            std = 0.01 if name == "out.w" else math.sqrt(2.0 / fan_in)
            values = torch.randn(slot.shape, generator=generator) * std
            params[slot.offset : slot.offset + slot.size] = values.flatten()
        return params

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        members = len(params)
        if members == 0:  # a grouped convolution needs at least one group
            return params.new_zeros((0, self.output_size))
        hidden = inputs.to(params.dtype)
        if inputs.dtype == torch.uint8:
            hidden = hidden / 255.0
        # (n, C, H, W) -> (1, n*C, H, W): each member's frames are one convolution group.
        hidden = hidden.reshape(1, members * hidden.shape[1], *hidden.shape[2:])
        with thread_count_invariant_convolutions(hidden.device):
            for layer, (out_channels, _, stride) in enumerate(CONV_LAYERS):
                weight = self.layout.view(params, f"conv{layer}.w")
                bias = self.layout.view(params, f"conv{layer}.b")
                if self.padding == "same":
                    hidden = F.pad(hidden, self.paddings[layer])
                kernels = weight.reshape(members * out_channels, *weight.shape[2:])
                if kernels.data_ptr() == weight.data_ptr():
                    # A lone member's kernels would be read in place, from wherever its row
                    # starts; the CPU's convolution rounds differently with the pointer's
                    # alignment, so it gets the fresh copy every grouped call makes (the
                    # reshape of several members' strided rows copies), and a member's
                    # outputs do not depend on its company (tests/backends/test_batch_invariance.py).
                    kernels = kernels.clone()
                hidden = F.conv2d(
                    hidden,
                    kernels,
                    bias.reshape(-1),
                    stride=stride,
                    groups=members,
                )
                hidden = torch.relu(hidden)
        hidden = hidden.reshape(members, 1, self.flat_size)
        hidden = torch.relu(
            torch.baddbmm(
                self.layout.view(params, "fc.b").unsqueeze(1),
                hidden,
                self.layout.view(params, "fc.w"),
            )
        )
        output = torch.baddbmm(
            self.layout.view(params, "out.b").unsqueeze(1),
            hidden,
            self.layout.view(params, "out.w"),
        )
        return output.squeeze(1)

    def features(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """The 512 hidden features of one parameter set (a ``(D,)`` vector or its named
        tensors) on a batch of frames (differentiable: learners train through it and share
        it with a value head)."""
        hidden = inputs.to(self.layout.tensor(params, "conv0.w").dtype)
        if inputs.dtype == torch.uint8:
            hidden = hidden / 255.0
        for layer, (_, _, stride) in enumerate(CONV_LAYERS):
            if self.padding == "same":
                hidden = F.pad(hidden, self.paddings[layer])
            weight = self.layout.tensor(params, f"conv{layer}.w")
            bias = self.layout.tensor(params, f"conv{layer}.b")
            hidden = torch.relu(F.conv2d(hidden, weight, bias, stride=stride))
        weight, bias = self.layout.tensor(params, "fc.w"), self.layout.tensor(params, "fc.b")
        return torch.relu(torch.addmm(bias, hidden.reshape(len(hidden), self.flat_size), weight))

    def head(self, params: Params, features: torch.Tensor) -> torch.Tensor:
        """The output layer of one parameter set on :meth:`features`."""
        weight, bias = self.layout.tensor(params, "out.w"), self.layout.tensor(params, "out.b")
        return torch.addmm(bias, features, weight)

    def forward_single(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        return self.head(params, self.features(params, inputs))

    def describe(self) -> str:
        return (
            f"Nature CNN ({self.padding} padding) on {self.input_shape}, {self.num_params:,} params"
        )
