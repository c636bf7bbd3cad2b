"""A trained policy as one ``torch.nn.Module``: raw observations in, env actions out.

:class:`PolicyModule` holds everything acting needs, as buffers and parameters:

- the entries a run removed from the task's observations (``env.observation_mask``),
  dropped here when given the task's full observation;
- the observation normalizer's mean and std (float64, as the run computed them),
  ``clip((obs - mean) / std, -5, 5)``;
- the network, a single member of it: the layer table's networks (MLP, Nature CNN,
  IMPALA, recurrent cores) run by the same table as training (:class:`LayerTableNet`), a
  ``net.type=module`` network is the user's own module with the member's parameters
  loaded into it; virtual batch norm's statistics are folded into the weights;
- frames with numbers beside them (Doom's health): the packing of the env's ``Dict``
  observation (:mod:`neuroplug.envs.measurements`), so the module takes the ``Dict`` as
  the env gives it, or the packed frame;
- the action head: a discrete action is the argmax of the outputs, a continuous one the
  ``tanh`` of them scaled into the action box, as the run evaluated its policy.

A recurrent policy's forward takes and returns its state ``(batch, H)``, zeros at an
episode's start (:meth:`PolicyModule.initial_state`). The module is deterministic and
plain PyTorch: ``torch.jit.trace`` and ``torch.onnx.export`` take it
(:mod:`neuroplug.deploy.export`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from neuroplug.envs.measurements import MeasurementLayout
from neuroplug.errors import NeuroplugError
from neuroplug.nets.layers import as_float, forward_single_with_state
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.network import Network

CLIP = 5.0
"""The normalizer's clip (:mod:`neuroplug.nets.normalizer`)."""


class PolicyInputError(NeuroplugError, ValueError):
    """Observations (or a state) of a shape or type the policy does not take."""


class LayerTableNet(nn.Module):
    """One member of a layer-table network (:mod:`neuroplug.nets.layers`): its slots as
    parameters, run by the table's own single-member forward."""

    def __init__(self, network: Network, params: torch.Tensor) -> None:
        super().__init__()
        self.layers = network.layers
        self.layout = network.layout
        self.slot_names = list(network.layout.slots)
        for name, tensor in network.layout.split(params.detach().float()).items():
            self.register_parameter(_attribute(name), nn.Parameter(tensor.clone()))

    def forward(
        self, inputs: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Outputs ``(b, out)`` and the new recurrent state (None without a core)."""
        tensors = {name: getattr(self, _attribute(name)) for name in self.slot_names}
        return forward_single_with_state(self.layers, self.layout, tensors, inputs, state)


class ModuleNet(nn.Module):
    """One member of a ``net.type=module`` network: the user's module (or the encoder with
    neuroplug's head), its parameters the member's."""

    def __init__(self, network: ModuleNetwork, params: torch.Tensor) -> None:
        super().__init__()
        self.module = copy.deepcopy(network.module).eval()
        nn.utils.vector_to_parameters(params.detach().float(), self.module.parameters())
        self.encoder = network.encoder_features > 0
        self.recurrent = network.state_size > 0

    def forward(
        self, inputs: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Outputs ``(b, out)`` and the new recurrent state (None without one)."""
        inputs = as_float(inputs, torch.float32) if inputs.dtype != torch.float32 else inputs
        if not self.encoder:
            if not self.recurrent:
                return self.module(inputs), None
            if state is None:
                state = inputs.new_zeros((inputs.shape[0], self.module.state_size))
            return self.module(inputs, state)
        if self.recurrent:
            outputs, new_state = self.module(inputs, state, "all")
            return outputs, new_state
        return self.module(inputs, None, "all"), None


class PolicyModule(nn.Module):
    """Raw observations -> env actions (see the module docstring).

    ``forward(observations)`` takes a batch ``(b, *obs_shape)`` or one observation
    ``obs_shape`` (tensor or numpy array) and returns actions ``(b,)`` int64 (discrete) or
    ``(b, A)`` float32 (continuous), unbatched for one observation. A recurrent policy's
    ``forward(observations, state)`` returns ``(actions, new_state)``.
    """

    def __init__(
        self,
        net: nn.Module,
        env: dict[str, Any],
        normalizer: dict[str, Any] | None,
        state_size: int,
    ) -> None:
        super().__init__()
        self.net = net
        self.env = dict(env)
        """The env it acts in (:func:`neuroplug.training.policy_file.describe_env`)."""
        self.obs_shape = tuple(env["obs_shape"])
        layout = env.get("measurement_layout")
        self.measurement_layout = MeasurementLayout.from_description(layout) if layout else None
        """Frames with numbers beside them: an observation given as the env's ``Dict`` is
        packed (:mod:`neuroplug.envs.measurements`) before the network reads it."""
        self.discrete = bool(env["discrete"])
        self.state_size = int(state_size)
        mask = list(env.get("observation_mask") or [])
        self.full_width = self.obs_shape[0] + len(mask) if mask else 0
        kept = [index for index in range(self.full_width) if index not in set(mask)]
        self.register_buffer("kept", torch.tensor(kept, dtype=torch.long), persistent=False)
        self.normalizes = normalizer is not None
        if normalizer is not None:
            count = float(normalizer["count"])
            total = torch.as_tensor(normalizer["total"], dtype=torch.float64)
            squares = torch.as_tensor(normalizer["total_squares"], dtype=torch.float64)
            mean = total / count
            # The normalizer's floor (nets/normalizer.py): std >= 1e-2.
            std = torch.sqrt(torch.clamp(squares / count - mean.square(), min=1e-4))
            self.register_buffer("mean", mean)
            self.register_buffer("std", std)
        if not self.discrete:
            low = torch.tensor(env["action_low"], dtype=torch.float32)
            high = torch.tensor(env["action_high"], dtype=torch.float32)
            self.register_buffer("action_low", low)
            self.register_buffer("action_high", high)

    @property
    def recurrent(self) -> bool:
        """Whether its forward takes and returns a state."""
        return self.state_size > 0

    def initial_state(self, batch: int = 1) -> torch.Tensor:
        """Zeros ``(batch, H)``: a recurrent policy's state at an episode's start."""
        return torch.zeros((batch, self.state_size), device=self._device())

    def _device(self) -> torch.device:
        return next(self.parameters()).device

    def prepare(self, observations: Any) -> tuple[torch.Tensor, bool]:
        """The network's input for ``observations`` and whether they were one (unbatched)."""
        if isinstance(observations, Mapping):
            observations = self._packed(observations)
        if not isinstance(observations, torch.Tensor):
            observations = torch.as_tensor(observations)
        observations = observations.to(self._device())
        # The batch size stays symbolic (an export's batch is free): only the rank and
        # the other sizes, fixed for a policy, are read as numbers.
        single = observations.dim() == len(self.obs_shape)
        body = tuple(int(size) for size in observations.shape[0 if single else 1 :])
        widths = {self.obs_shape[-1]} | ({self.full_width} if self.full_width else set())
        if observations.dim() - (0 if single else 1) != len(self.obs_shape) or not (
            body[:-1] == self.obs_shape[:-1] and body[-1] in widths
        ):
            expected = " or ".join(
                str((*self.obs_shape[:-1], width)) for width in sorted(widths)
            )  # fmt: skip
            raise PolicyInputError(
                f"observations of shape {tuple(observations.shape)}: this policy "
                f"({self.env['task_id']}) takes one observation of shape {expected} or a "
                "batch (b, ...) of them"
            )
        if single:
            observations = observations.unsqueeze(0)
        if self.full_width and observations.shape[-1] == self.full_width:
            observations = observations.index_select(-1, self.kept)
        if self.normalizes:
            scaled = (observations.to(torch.float64) - self.mean) / self.std
            observations = scaled.clamp(-CLIP, CLIP).to(torch.float32)
        elif observations.dtype not in (torch.uint8, torch.float32):
            observations = observations.to(torch.float32)
        return observations, single

    def _packed(self, observations: Mapping) -> np.ndarray:
        """A ``Dict`` observation as its packed frame: one observation where its numbers
        are vectors, a batch where they are ``(b, size)``; an EnvPool task's frames and info
        entries (``env.measurements``): one where the frames are ``(C, H, W)``."""
        layout = self.measurement_layout
        if layout is None:
            raise PolicyInputError(
                f"observations as a mapping ({', '.join(map(str, observations))}): this policy "
                f"({self.env['task_id']}) takes arrays of shape {self.obs_shape}"
            )
        missing = [key for key in layout.keys if key not in observations]
        if missing:
            raise PolicyInputError(
                f"observations without {', '.join(missing)}: this policy "
                f"({self.env['task_id']}) reads {', '.join(layout.keys)}"
            )
        if layout.channels_first:  # an EnvPool task's frames (C, H, W), numbers from its info
            single = np.ndim(observations[layout.image]) == 3
        else:
            single = np.ndim(np.asarray(observations[layout.vectors[0][0]])) == 1
        return layout.pack(observations) if single else layout.pack_batch(observations)

    def outputs(
        self, observations: Any, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The network's raw outputs ``(b, out)`` (logits, Q-values or pre-squash means)
        and the new state."""
        inputs, _ = self.prepare(observations)
        return self._network(inputs, state)

    def _network(
        self, inputs: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if state is not None and (
            state.dim() != 2
            or int(state.shape[1]) != self.state_size
            or (_eager() and state.shape[0] != inputs.shape[0])
        ):
            raise PolicyInputError(
                f"a state of shape {tuple(state.shape)} for {inputs.shape[0]} observations; "
                f"this policy's state is (batch, {self.state_size}) (initial_state(batch))"
            )
        return self.net(inputs, state)

    def act(self, outputs: torch.Tensor) -> torch.Tensor:
        """Env actions for outputs ``(b, out)``: argmax, or ``tanh`` scaled into the box."""
        if self.discrete:
            return outputs.argmax(dim=-1)
        unit = torch.tanh(outputs.float())
        actions = self.action_low + (unit + 1.0) * 0.5 * (self.action_high - self.action_low)
        return torch.minimum(torch.maximum(actions, self.action_low), self.action_high)

    def forward(self, observations: Any, state: torch.Tensor | None = None):
        """Actions for ``observations`` (and, recurrent, the new state); see the class."""
        inputs, single = self.prepare(observations)
        if self.recurrent and state is None:
            state = inputs.new_zeros((inputs.shape[0], self.state_size), dtype=torch.float32)
        outputs, new_state = self._network(inputs, state)
        actions = self.act(outputs)
        if single:
            actions = actions.squeeze(0)
        return (actions, new_state) if self.recurrent else actions

    def extra_repr(self) -> str:
        actions = (
            f"{self.env['num_actions']} discrete actions"
            if self.discrete
            else f"{self.env['num_actions']}-dim box actions"
        )
        core = f", state {self.state_size}" if self.recurrent else ""
        return f"task={self.env['task_id']}, obs={self.obs_shape}, {actions}{core}"


def network_module(network: Network, params: torch.Tensor) -> nn.Module:
    """One member ``params`` ``(D,)`` of ``network`` as a module (virtual batch norm's
    statistics folded into it)."""
    params = params.detach().float().reshape(-1)
    if network.normalized:
        params = network.deploy(params.unsqueeze(0))[0]
    if isinstance(network, ModuleNetwork):
        return ModuleNet(network, params)
    if not network.layers:
        raise NeuroplugError(
            f"{network.describe()} has no layer table and is not a net.type=module "
            "network: it cannot be deployed as a module"
        )
    return LayerTableNet(network, params)


def _eager() -> bool:
    """Whether this forward runs as itself, not traced or exported (where the batch is a
    symbol, and comparing it would fix it)."""
    return not (torch.jit.is_tracing() or torch.compiler.is_compiling())


def _attribute(slot: str) -> str:
    return slot.replace(".", "_")
