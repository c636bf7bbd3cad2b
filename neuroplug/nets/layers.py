"""A network's forward pass as a table of layers, and the two ways torch runs it.

Every network neuroplug ships is a sequence of layers over named slots of its flat
parameter layout (:mod:`neuroplug.nets.layout`). The table (:attr:`Network.layers
<neuroplug.nets.network.Network.layers>`) is the one place that structure is written. The
forward passes here, the torch backend's low-rank forward, the Triton backend and the
learners' actor-critic all read it, so a new architecture built from these layer kinds
runs under all of them without editing any.

Layer kinds and their weight slots:

- ``linear``: weight ``(fan_in, fan_out)``, bias ``(fan_out,)``; the input is flattened
  to ``(n, fan_in)`` first (so a linear layer may follow a convolution);
- ``conv2d``: weight ``(out_channels, in_channels, k, k)``, bias ``(out_channels,)``,
  with a stride and explicit (left, right, top, bottom) zero padding;
- a recurrent core, its kind the core's name (``neuroplug.cores`` plugins,
  :mod:`neuroplug.nets.core`); the first-party two:
- ``gru``: (Cho et al. 2014, PyTorch's ``GRUCell`` arithmetic). Input
  weight ``(fan_in, 3H)`` and bias ``(3H,)``, recurrent weight ``(H, 3H)`` and bias
  ``(3H,)``, gates in the order reset, update, new::

      r = sigmoid(x W_r + b_r + h U_r + c_r)      z = sigmoid(x W_z + b_z + h U_z + c_z)
      n = tanh(x W_n + b_n + r * (h U_n + c_n))   h' = (1 - z) * n + z * h

  Its output is ``h'``, which is also the state the next step starts from;
- ``lstm``: (PyTorch's ``LSTMCell`` arithmetic), the same slots with
  ``4H`` gates in the order input, forget, cell, output::

      i, f, o = sigmoid(...), g = tanh(...)   c' = f * c + i * g   h' = o * tanh(c')

  Its output is ``h'``; its state is ``h`` and ``c`` side by side, ``2H`` wide.

A linear or convolution layer may carry virtual batch norm (``scale`` and ``shift``
slots, :mod:`neuroplug.nets.virtual_batch_norm`): its output is normalized with statistics
of a fixed reference batch before the activation. The forwards here run such a layer as a
plain affine layer: they take parameters with the statistics already folded into its
weight and bias (:meth:`Network.deploy <neuroplug.nets.network.Network.deploy>`), which is
what every backend runs.

An image observation may carry measurements below its pixels (health, ammunition:
:mod:`neuroplug.envs.measurements`); a linear layer with ``measurements`` set takes them
after the previous layer's flattened output, and the forwards here give the layers before
it the pixels alone (:func:`split_measurements`).

A network holds at most one core; its state is a ``(rows, S)`` tensor (:func:`state_size`)
that the caller keeps per episode (zeros at an episode's start) and passes to the
``*_with_state`` forwards.

uint8 inputs (frames) are scaled to [0, 1] before the first layer.

Different members' convolutions run as one grouped convolution: the population's inputs
are stacked along channels and each member is one group. A linear layer of a population
is one batched matrix multiply. On CPU the population's convolutions use ATen's native
kernels, not oneDNN's: oneDNN's grouped convolution changes its last bits with the number
of threads, and the run changes PyTorch's thread count with the machine's load
(:class:`neuroplug.runtime.devices.TorchThreads`). The native kernels give the same bits at any
count, at about oneDNN's speed on a small CPU.

A member's outputs here depend on its company's shape: BLAS and oneDNN pick kernels by a
call's shape and its operands' alignment (on Intel CPUs with AVX-512 a member's last bits
change with the number of members beside it). Callers that promise more keep the company
fixed: the torch backend computes fixed tiles of members (:mod:`neuroplug_backends.tiles`),
a population of learners acts and learns in the company its configuration gives it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from neuroplug.envs.measurements import measurement_rows
from neuroplug.nets.cells import core_names, load_core
from neuroplug.nets.layout import ParameterLayout, Params

LINEAR = "linear"
CONV2D = "conv2d"
GRU = "gru"
LSTM = "lstm"
FEEDFORWARD_KINDS = (LINEAR, CONV2D)
"""The kinds without state: what a backend that runs no recurrent core supports. Every
other kind is a recurrent core's name (:func:`is_recurrent`)."""


def is_recurrent(kind: str) -> bool:
    """Whether a layer of ``kind`` is a recurrent core (``gru``, ``lstm``, a plugin's)."""
    return kind not in FEEDFORWARD_KINDS


def _elu(x: torch.Tensor) -> torch.Tensor:
    # exp(min(x, 0)): no overflow in the branch not taken, so no NaN gradient either.
    return torch.where(x > 0, x, torch.expm1(torch.clamp(x, max=0.0)))


_TANH_SATURATES = 9.0
"""|x| beyond which float32 tanh is +-1 exactly (1 - tanh(9) = 3e-8, under half an ulp)."""


def _tanh_value(x: torch.Tensor) -> torch.Tensor:
    # tanh(x) = expm1(2x) / (expm1(2x) + 2): no cancellation near 0 (expm1 is accurate
    # there), no overflow once clamped; within 2 ulp of torch.tanh.
    e = torch.clamp(x, -_TANH_SATURATES, _TANH_SATURATES).mul_(2.0).expm1_()
    return e.div_(e + 2.0)


class _Tanh(torch.autograd.Function):
    """The expm1 form under autograd, differentiated as tanh is: ``g * (1 - y^2)``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        y = _tanh_value(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


def _tanh(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cpu":
        return torch.tanh(x)  # one fused kernel there, the same for every element
    if x.requires_grad and torch.is_grad_enabled():
        return _Tanh.apply(x)
    return _tanh_value(x)


def _sigmoid(x: torch.Tensor) -> torch.Tensor:
    return _tanh(x * 0.5) * 0.5 + 0.5


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": _tanh,
    "relu": torch.relu,
    "elu": _elu,
    "sigmoid": _sigmoid,
    "identity": _identity,
}
"""Activation name -> function (names as ``net.activation`` and the Triton kernels know them).

Each computes an element the same way wherever it sits in a tensor. PyTorch's CPU kernels
run the whole vectors of a tensor through SIMD code and the last few elements through
scalar code; ``F.elu`` and ``torch.sigmoid`` round differently in the two (4% of elements
on AVX2), so a member's outputs changed with the size of its batch. ``expm1`` and the
arithmetic here agree in both, so every activation is written with them: ELU, the tanh
(``expm1(2x) / (expm1(2x) + 2)``, which is also about twice as fast on CPU as
``torch.tanh``, an unvectorised loop in PyTorch's CPU build) and the sigmoid
(``(tanh(x/2) + 1) / 2``); each within 2e-7 of float64.
"""


@dataclass(frozen=True)
class Layer:
    """One layer of a network's forward pass: its kind, slots and activation."""

    kind: str
    """``linear``, ``conv2d`` or a recurrent core's name (``gru``, ``lstm``, a plugin's)."""
    weight: str
    """Name of the weight slot in the network's layout."""
    bias: str
    """Name of the bias slot."""
    activation: str = "identity"
    """Applied to the layer's output (a key of :data:`ACTIVATIONS`)."""
    stride: int = 1
    """Convolutions only."""
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    """Convolutions only: zeros added (left, right, top, bottom) before the layer."""
    recurrent_weight: str = ""
    """Recurrent cores only: the slot of the state's weight ``(H, 3H)``."""
    recurrent_bias: str = ""
    """Recurrent cores only: the slot of the state's bias ``(3H,)``."""
    scale: str = ""
    """Virtual batch norm only: the slot of its scale (gamma, one per output channel or
    unit); set on a layer whose output is normalized (:mod:`neuroplug.nets.virtual_batch_norm`)."""
    shift: str = ""
    """Virtual batch norm only: the slot of its shift (beta)."""
    measurements: int = 0
    """Linear layers only: this many measurements, read from below the observation's
    pixels (:mod:`neuroplug.envs.measurements`, :func:`split_measurements`), follow the
    previous layer's flattened output in this layer's input."""

    def __post_init__(self) -> None:
        recurrent = is_recurrent(self.kind)
        if recurrent:
            if self.kind not in core_names():
                known = ", ".join([*FEEDFORWARD_KINDS, *core_names()])
                raise ValueError(
                    f"layer kind {self.kind!r}; known: {known} (the last are the installed "
                    "recurrent cores, neuroplug.cores plugins)"
                )
        if recurrent != bool(self.recurrent_weight and self.recurrent_bias):
            raise ValueError("a recurrent core, and only a recurrent core, has recurrent slots")
        if bool(self.scale) != bool(self.shift):
            raise ValueError("a normalized layer has both a scale and a shift slot")
        if recurrent and self.scale:
            raise ValueError("virtual batch norm normalizes linear and convolution layers only")
        if recurrent and self.activation != "identity":
            raise ValueError("a recurrent core's output is its state: its activation is identity")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r}; known: {', '.join(ACTIVATIONS)}")
        if self.measurements and self.kind != LINEAR:
            raise ValueError("measurements join a linear layer's input only")

    @property
    def normalized(self) -> bool:
        """Whether virtual batch norm normalizes this layer's output before its activation."""
        return bool(self.scale)

    @property
    def padded(self) -> bool:
        """Whether the input is padded before this layer."""
        return any(self.padding)


def measurement_count(layers: Sequence[Layer]) -> int:
    """E: the measurements ``layers`` read beside the pixels (0: the observation is pixels
    alone). At most one layer joins them."""
    joining = [layer.measurements for layer in layers if layer.measurements]
    if len(joining) > 1:
        raise ValueError("at most one layer of a network joins the measurements")
    return joining[0] if joining else 0


def split_measurements(inputs: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of packed frames ``(..., C, H + R, W)`` (:mod:`neuroplug.envs.measurements`)
    as its pixels ``(..., C, H, W)`` and its ``count`` measurements ``(..., count)``, both
    views or slices of ``inputs`` in its dtype (bytes, or floats already scaled by 255)."""
    rows = measurement_rows(count, inputs.shape[-1])
    pixels = inputs[..., : inputs.shape[-2] - rows, :]
    values = inputs[..., 0, inputs.shape[-2] - rows :, :].flatten(-2)[..., :count]
    return pixels, values


def fan_in(layout: ParameterLayout, layer: Layer) -> int:
    """Inputs per output unit of a linear layer (the rows of its weight)."""
    return layout.slots[layer.weight].shape[0]


def out_channels(layout: ParameterLayout, layer: Layer) -> int:
    """Output channels of a convolution (the rows of its kernel)."""
    return layout.slots[layer.weight].shape[0]


def state_size(layout: ParameterLayout, layers: Sequence[Layer]) -> int:
    """S: the width of the recurrent core's state (H for a GRU, 2H for an LSTM's ``h`` and
    ``c``), 0 for a network without one."""
    cores = [layer for layer in layers if is_recurrent(layer.kind)]
    if len(cores) > 1:
        raise ValueError("a network holds at most one recurrent core")
    if not cores:
        return 0
    width = layout.slots[cores[0].recurrent_weight].shape[0]
    return load_core(cores[0].kind).state_blocks * width


def core_update(
    kind: str,
    input_gates: torch.Tensor,
    state: torch.Tensor,
    state_gates: Callable[[torch.Tensor], torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """A recurrent core's step: its output and new state from ``x W + b``, its state, and
    ``state_gates`` (``h -> h U + c``), by the core plugin named ``kind``
    (:meth:`RecurrentCore.update <neuroplug.nets.cells.RecurrentCore.update>`)."""
    return load_core(kind).update(input_gates, state, state_gates)


def lstm_gates(
    gates: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The LSTM's activated input, forget, candidate and output gates ``i, f, g, o`` (each
    ``(..., H)``) from its summed gates ``x W + b + h U + c`` (``(..., 4H)``). Element-wise,
    with the activations of :data:`ACTIVATIONS`."""
    size = gates.shape[-1] // 4
    return (
        _sigmoid(gates[..., :size]),
        _sigmoid(gates[..., size : 2 * size]),
        _tanh(gates[..., 2 * size : 3 * size]),
        _sigmoid(gates[..., 3 * size :]),
    )


def lstm_update(gates: torch.Tensor, cell: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The LSTM's output ``h' = o tanh(c')`` and cell ``c' = f c + i g`` from its summed
    gates (:func:`lstm_gates`) and cell ``c``."""
    input_gate, forget, candidate, output = lstm_gates(gates)
    cell = forget * cell + input_gate * candidate
    return output * _tanh(cell), cell


def gru_gates(
    input_gates: torch.Tensor, state_gates: torch.Tensor, state: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The GRU's reset, update and new gates ``r, z, n`` (each ``(..., H)``) from ``x W + b``
    and ``h U + c`` (each ``(..., 3H)``). Element-wise only, with the activations of
    :data:`ACTIVATIONS`, so a row's result does not depend on the rows beside it."""
    size = state.shape[-1]
    reset = _sigmoid(input_gates[..., :size] + state_gates[..., :size])
    update = _sigmoid(input_gates[..., size : 2 * size] + state_gates[..., size : 2 * size])
    new = _tanh(input_gates[..., 2 * size :] + reset * state_gates[..., 2 * size :])
    return reset, update, new


def gru_update(
    input_gates: torch.Tensor, state_gates: torch.Tensor, state: torch.Tensor
) -> torch.Tensor:
    """The GRU's new state from ``x W + b`` and ``h U + c`` (each ``(..., 3H)``) and ``h``:
    ``(1 - z) n + z h`` of :func:`gru_gates`."""
    _, update, new = gru_gates(input_gates, state_gates, state)
    return new + update * (state - new)


def kernel_size(layout: ParameterLayout, layer: Layer) -> int:
    """Side of a convolution's square kernel."""
    return layout.slots[layer.weight].shape[-1]


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


def as_float(inputs: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Inputs in ``dtype``, uint8 frames scaled to [0, 1], in the inputs' memory layout."""
    hidden = inputs.to(dtype)
    if inputs.dtype == torch.uint8:
        hidden.div_(255.0)  # the conversion's own copy: one pass over a minibatch, not two
    return hidden


def forward_population(
    layers: Sequence[Layer], layout: ParameterLayout, params: torch.Tensor, inputs: torch.Tensor
) -> torch.Tensor:
    """Outputs ``(n, out)`` of ``layers``: row j of ``params`` ``(n, D)`` on ``inputs[j]``
    (a recurrent core starts from zeros: an episode's first step)."""
    return forward_members(layers, layout, params, inputs.unsqueeze(1)).squeeze(1)


def forward_population_with_state(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: torch.Tensor,
    inputs: torch.Tensor,
    state: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`forward_population` for a network with a recurrent core: row j continues
    from its state ``state[j]`` (``(n, H)``); returns the outputs and the new states."""
    outputs, new_state = forward_members_with_state(
        layers, layout, params, inputs.unsqueeze(1), state.unsqueeze(1)
    )
    return outputs.squeeze(1), new_state.squeeze(1)


def forward_members(
    layers: Sequence[Layer], layout: ParameterLayout, params: torch.Tensor, inputs: torch.Tensor
) -> torch.Tensor:
    """Outputs ``(K, b, out)`` of ``layers``: row k of ``params`` ``(K, D)`` on each of its
    ``b`` inputs ``inputs[k]`` (``(K, b, *input)``): a population of learners, each acting
    on its own envs, in one computation. With ``b = 1`` it is :func:`forward_population`,
    and a member's outputs do not depend on the other members."""
    return forward_members_with_state(layers, layout, params, inputs, None)[0]


def forward_members_with_state(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: torch.Tensor,
    inputs: torch.Tensor,
    state: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`forward_members` continuing each row from its recurrent state ``state``
    (``(K, b, H)``; None: zeros, an episode's first step). Returns the outputs and the new
    state (None for a network without a core). Every member runs its core with its own
    weights on its own rows' states, in the same batched products as its linear layers."""
    members, rows = len(params), inputs.shape[1]
    size = state_size(layout, layers)
    if members == 0 or rows == 0:  # a grouped convolution needs at least one group
        outputs = params.new_zeros((members, rows, layout.slots[layers[-1].bias].shape[0]))
        return outputs, (params.new_zeros((members, rows, size)) if size else None)
    hidden = as_float(inputs, params.dtype)
    measurements = None
    if count := measurement_count(layers):
        hidden, measurements = split_measurements(hidden, count)
    views = layout.views(params)
    new_state = None
    for layer in layers:
        if layer.measurements:
            hidden = torch.cat((_members_flat(hidden, members, rows), measurements), -1)
        hidden, layer_state = members_pre_activation(layer, layout, views, hidden, rows, state)
        if layer_state is not None:
            new_state = layer_state
        hidden = ACTIVATIONS[layer.activation](hidden)
    if hidden.dim() == 4:  # a network ending in a convolution
        hidden = hidden.reshape(rows, members, -1).transpose(0, 1)
    return hidden.reshape(members, rows, -1), new_state


def _members_flat(hidden: torch.Tensor, members: int, rows: int) -> torch.Tensor:
    """A layer's output as ``(K, b, features)``: the members' layout of linear layers."""
    if hidden.dim() == 4:  # after a convolution: (b, K*C, H, W)
        return hidden.reshape(rows, members, -1).transpose(0, 1)
    return hidden.reshape(members, rows, -1)


FEW_INPUTS = 8
"""Below this many inputs, a layer's one-row-per-member product is a sum of element-wise
products (:func:`members_pre_activation`)."""


def members_pre_activation(
    layer: Layer,
    layout: ParameterLayout,
    views: dict[str, torch.Tensor],
    hidden: torch.Tensor,
    rows: int,
    state: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One layer of :func:`forward_members_with_state` before its activation: every
    member's ``x W + b`` (a core's output) on its own rows, and a core's new state.

    ``hidden`` is the layer's input as the previous layer left it: ``(K, b, ...)``, or
    ``(b, K*C, H, W)`` after a convolution (each member's channels one group); the result
    keeps those layouts. ``views`` are the members' slots (:meth:`ParameterLayout.views`),
    ``rows`` is b."""
    members = len(views[layer.bias])
    if layer.kind == CONV2D:
        # (K, b, C, H, W) -> (b, K*C, H, W): each member's inputs are one convolution group.
        if hidden.dim() == 5:
            hidden = hidden.transpose(0, 1)
        hidden = hidden.reshape(rows, -1, *hidden.shape[-2:])
        weight = views[layer.weight]
        kernels = weight.reshape(-1, *weight.shape[2:])
        if layer.padded:
            hidden = F.pad(hidden, layer.padding)
        with thread_count_invariant_convolutions(hidden.device):
            hidden = F.conv2d(
                hidden,
                kernels,
                views[layer.bias].reshape(-1),
                stride=layer.stride,
                groups=members,
            )
        return hidden, None
    hidden = _members_flat(hidden, members, rows).reshape(members, rows, fan_in(layout, layer))
    bias, weight = views[layer.bias].unsqueeze(1), views[layer.weight]
    recurrent = is_recurrent(layer.kind)
    if not recurrent and rows == 1 and hidden.shape[-1] < FEW_INPUTS and hidden.is_cpu:
        # One row per member (a population's step) on fewer inputs than a SIMD lane: MKL's
        # batched product is slow there (benchmarks/results/design_measurements.md), and
        # this sums each member's products in a fixed order, whatever else is in the batch.
        return (hidden.transpose(1, 2) * weight).sum(1, keepdim=True) + bias, None
    gates = torch.baddbmm(bias, hidden, weight)
    if not recurrent:
        return gates, None
    size = state_size(layout, [layer])
    previous = state if state is not None else hidden.new_zeros(members, rows, size)
    recurrent_bias = views[layer.recurrent_bias].unsqueeze(1)
    recurrent_weight = views[layer.recurrent_weight]
    return core_update(
        layer.kind,
        gates,
        previous.to(hidden.dtype),
        lambda h: torch.baddbmm(recurrent_bias, h, recurrent_weight),
    )


def trains_faster_channels_last(inputs: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether a learner's convolution runs channels-last: on CPU, where autograd records
    it. oneDNN's forward and backward of the Nature CNN over a 1024-frame minibatch took
    0.33 s instead of 0.48 s that way (2 idle cores); acting on a few frames without
    gradients was no faster, so it keeps PyTorch's default layout."""
    return inputs.device.type == "cpu" and weight.requires_grad and torch.is_grad_enabled()


def _autocast_dtype(device: torch.device, dtype: torch.dtype) -> torch.dtype:
    """What frames are converted to: the weights' ``dtype``, or autocast's where it is on
    (the first layer would cast them there anyway: one pass over a minibatch, not two)."""
    if dtype == torch.float32 and torch.is_autocast_enabled(device.type):
        return torch.get_autocast_dtype(device.type)
    return dtype


def forward_single(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: Params,
    inputs: torch.Tensor,
    layer_inputs: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """Outputs ``(b, out)`` of ``layers`` with one parameter set (a flat ``(D,)`` vector or
    its named tensors) on a batch of inputs; differentiable, so learners train through it.
    ``layer_inputs``, when given, receives each layer's input, for a written-out backward
    pass (:mod:`neuroplug.nets.gradients`). A recurrent core starts from zeros."""
    return forward_single_with_state(layers, layout, params, inputs, None, layer_inputs)[0]


def forward_single_with_state(
    layers: Sequence[Layer],
    layout: ParameterLayout,
    params: Params,
    inputs: torch.Tensor,
    state: torch.Tensor | None,
    layer_inputs: list[torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`forward_single` continuing each row from its recurrent state ``state``
    (``(b, H)``; None: zeros); returns the outputs and the new state (None without a core)."""
    new_state = None
    hidden = inputs
    dtype = layout.tensor(params, layers[0].weight).dtype if layers else inputs.dtype
    if hidden.dtype != dtype:
        first = layers[0]
        if (
            first.kind == CONV2D
            and not first.padded
            and not measurement_count(layers)
            and trains_faster_channels_last(hidden, layout.tensor(params, first.weight))
        ):
            # Laid out channels-last as bytes, before the conversion: the floats come out
            # in the layout the convolution takes, not copied into it after.
            hidden = hidden.contiguous(memory_format=torch.channels_last)
        hidden = as_float(hidden, _autocast_dtype(inputs.device, dtype))
    measurements = None
    if count := measurement_count(layers):
        hidden, measurements = split_measurements(hidden, count)
    for layer in layers:
        if layer.measurements:
            hidden = torch.cat((hidden.flatten(1), measurements), 1)  # the batch stays free
        if layer_inputs is not None:
            layer_inputs.append(hidden)
        weight = layout.tensor(params, layer.weight)
        bias = layout.tensor(params, layer.bias)
        if layer.kind == CONV2D:
            if layer.padded:
                hidden = F.pad(hidden, layer.padding)
            if trains_faster_channels_last(hidden, weight):
                hidden = hidden.contiguous(memory_format=torch.channels_last)
                weight = weight.contiguous(memory_format=torch.channels_last)
            hidden = F.conv2d(hidden, weight, bias, stride=layer.stride)
        else:
            if hidden.dim() != 2:  # a reshape is one more node for autograd to walk back
                hidden = hidden.reshape(-1, weight.shape[0])  # -1: the batch stays free
            hidden = torch.addmm(bias, hidden, weight)
            if is_recurrent(layer.kind):
                recurrent_weight = layout.tensor(params, layer.recurrent_weight)
                recurrent_bias = layout.tensor(params, layer.recurrent_bias)
                previous = (
                    state.to(hidden.dtype)
                    if state is not None
                    else hidden.new_zeros(len(hidden), state_size(layout, [layer]))
                )
                hidden, new_state = core_update(
                    layer.kind,
                    hidden,
                    previous,
                    lambda h: torch.addmm(recurrent_bias, h, recurrent_weight),  # noqa: B023
                )
        if layer.activation != "identity":
            hidden = ACTIVATIONS[layer.activation](hidden)
    return hidden, new_state


def core_sequence(
    layer: Layer,
    layout: ParameterLayout,
    params: Params,
    inputs: torch.Tensor,
    state: torch.Tensor,
    keep: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The recurrent core ``layer`` with one parameter set over ``L`` steps of ``B`` rows:
    its activated outputs ``(L, B, H)`` and final states from inputs ``(L, B, fan_in)``,
    the states before the first step ``(B, S)``, and ``keep`` ``(L, B, 1)`` (0 where a step
    starts an episode). The input gates of every step are one product (the input weights
    read once, their gradient one product); the core steps its state
    (:meth:`~neuroplug.nets.cells.RecurrentCore.sequence`)."""
    steps, rows = inputs.shape[:2]
    gates = torch.addmm(
        layout.tensor(params, layer.bias),
        inputs.reshape(steps * rows, -1),
        layout.tensor(params, layer.weight),
    ).reshape(steps, rows, -1)
    outputs, state = load_core(layer.kind).sequence(
        gates,
        state.to(gates.dtype),
        keep.to(gates.dtype),
        layout.tensor(params, layer.recurrent_weight),
        layout.tensor(params, layer.recurrent_bias),
    )
    if layer.activation != "identity":
        outputs = ACTIVATIONS[layer.activation](outputs)
    return outputs, state
