"""Any ``torch.nn.Module`` as a population of networks (``net.type=module``).

The module's parameters, in ``named_parameters()`` order, are the flat layout: member i is
a row of the population's ``(n, D)`` matrix like any network's, so the Population, the
noise, seed-chain genomes, checkpoints and every algorithm work unchanged. The forward of
many different members is one batched computation: ``torch.func.functional_call`` of the
module on a member's tensors, vectorised over members by ``torch.func.vmap`` (the
founding idea of batching a population of different networks, without a hand-written
layer table).

The module is built as ``Module(observation_shape, outputs, **net.kwargs)``: the env's
observation shape (``(C, H, W)`` frames, ``(n,)`` vectors) and the number of outputs
(action logits, or the means of continuous actions before squashing); its ``forward``
takes a batch ``(b, *observation_shape)`` of float32 observations (uint8 frames scaled to
[0, 1]) and returns ``(b, outputs)``. A fresh member is the module built again under a
seed drawn from the member's generator, so its own initialisation is the distribution
fresh draws come from. Buffers (BatchNorm's running statistics) and parameters that are
not floating point are refused naming them: a member is its parameters alone.

Learners train it as they train the MLP: the module is the policy, and the critic a second
module of the same class with one output, both through autograd. What the layer table
gives and a module does not (yet): the Triton kernels, factored low-rank forwards, virtual
batch norm, recurrent cores, PBT's stacked update (its members then learn one by one) and a
shared encoder under reduced precision; a run that asks for one of these is refused naming
the setting, or runs the general path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import torch
from torch.func import functional_call, vmap

from neuroplug.config.schema import NetConfig
from neuroplug.config.targets import load_target
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets.layers import as_float
from neuroplug.nets.layout import ParameterLayout, Params
from neuroplug.nets.network import Network


class ModuleNetwork(Network):
    """A ``torch.nn.Module`` class (``net.module``) as a :class:`Network` over flat
    parameters; see the module docstring."""

    type_name = "module"
    supports_virtual_batch_norm = False
    config_class: ClassVar[type | None] = dict
    """Any ``net.kwargs``: they are the module's constructor arguments, checked by it."""

    def __init__(
        self,
        module_class: Callable[..., torch.nn.Module],
        input_shape: tuple[int, ...],
        output_size: int,
        kwargs: dict[str, Any] | None = None,
        name: str = "",
    ) -> None:
        self.module_class = module_class
        self.input_shape = tuple(input_shape)
        self.output_size = output_size
        self.kwargs = dict(kwargs or {})
        self.name = name or getattr(module_class, "__qualname__", str(module_class))
        self.module = self._build()
        self.layout = ParameterLayout(
            [(name, tuple(tensor.shape)) for name, tensor in self.module.named_parameters()]
        )
        self.layers = ()

    def _build(self) -> torch.nn.Module:
        module = self.module_class(self.input_shape, self.output_size, **self.kwargs)
        return module.eval()

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> ModuleNetwork:
        if not config.module:
            raise ConfigError(
                "net.module", "net.type=module needs the module's class", "package.module:Class"
            )
        unused = [
            name for name in ("core", "vbn") if getattr(config, name) not in ("none", None, False)
        ]
        if unused:
            raise ConfigError(
                f"net.{unused[0]}",
                f"a module network runs its own forward, and net.{unused[0]} belongs to the "
                "layer-table networks (mlp, nature_cnn)",
                f"net.{unused[0]}={'none' if unused[0] == 'core' else 'false'}, or a recurrent "
                "or normalised module of your own",
            )
        module_class = load_module_class(config.module)
        kwargs = dict(config.kwargs)
        try:
            network = cls(module_class, env.obs_shape, env.num_actions, kwargs, config.module)
        except TypeError as error:
            raise ConfigError(
                "net.kwargs",
                f"{config.module}({_signature(module_class)}) refused "
                f"(observation_shape={env.obs_shape}, outputs={env.num_actions}"
                + "".join(f", {key}={value!r}" for key, value in kwargs.items())
                + f"): {error}",
                "net.kwargs the constructor takes after (observation_shape, outputs)",
            ) from None
        network.check_module(config.module)
        return network

    def check_module(self, field_value: str) -> None:
        """Refuse, naming the part, what a member's flat parameters cannot hold, and an
        output of the wrong shape."""
        buffers = [name for name, _ in self.module.named_buffers()]
        if buffers:
            raise ConfigError(
                "net.module",
                f"{field_value} keeps buffers ({', '.join(buffers[:3])}): state outside its "
                "parameters (BatchNorm's running statistics) that no member would carry",
                "a module whose state is its parameters (LayerNorm, GroupNorm, or "
                "BatchNorm with track_running_stats=False)",
            )
        for name, tensor in self.module.named_parameters():
            if not tensor.is_floating_point():
                raise ConfigError(
                    "net.module",
                    f"{field_value}'s parameter {name!r} is {tensor.dtype}",
                    "floating-point parameters",
                )
        if self.num_params == 0:
            raise ConfigError(
                "net.module", f"{field_value} has no parameters", "a trainable module"
            )
        probe = torch.zeros((2, *self.input_shape))
        with torch.no_grad():
            try:
                outputs = self.module(probe)
            except Exception as error:
                raise ConfigError(
                    "net.module",
                    f"{field_value} failed on a batch of shape {tuple(probe.shape)}: "
                    f"{type(error).__name__}: {error}",
                    "a forward taking (batch, *observation_shape)",
                ) from None
        if tuple(getattr(outputs, "shape", ())) != (2, self.output_size):
            raise ConfigError(
                "net.module",
                f"{field_value} returned {tuple(getattr(outputs, 'shape', ()))} for a batch "
                f"of 2 observations; expected (2, {self.output_size})",
                "(batch, outputs): one row of action logits or means per observation",
            )

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        # The module's own initialisation, under a seed the member's generator draws.
        seed = int(torch.randint(0, 2**31 - 1, (), generator=generator))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            fresh = self._build()
        return torch.cat([tensor.detach().reshape(-1).float() for tensor in fresh.parameters()])

    def resized(self, output_size: int) -> ModuleNetwork:
        return ModuleNetwork(
            self.module_class, self.input_shape, output_size, self.kwargs, self.name
        )

    def _call(self, tensors: dict[str, torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
        return functional_call(self.module, tensors, (inputs,))

    def _inputs(self, inputs: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
        return as_float(inputs, params.dtype) if inputs.dtype != params.dtype else inputs

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Row j of ``params`` ``(n, D)`` on ``inputs[j]``: one vectorised call."""
        if len(params) == 0:
            return params.new_zeros((0, self.output_size))
        tensors = self.layout.views(params)
        inputs = self._inputs(inputs, params)
        one = vmap(lambda member, x: self._call(member, x.unsqueeze(0)).squeeze(0))
        return one(tensors, inputs)

    def forward_members(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Row k of ``params`` ``(K, D)`` on its inputs ``inputs[k]`` ``(K, b, *obs)``."""
        tensors = self.layout.views(params)
        return vmap(self._call)(tensors, self._inputs(inputs, params))

    def forward_single(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        tensors = params if not isinstance(params, torch.Tensor) else self.layout.split(params)
        reference = next(iter(tensors.values()))
        return self._call(dict(tensors), self._inputs(inputs, reference))

    def describe(self) -> str:
        return f"module {self.name} (torch.func over members), {self.num_params:,} params"


def load_module_class(target: str) -> type[torch.nn.Module]:
    """The ``torch.nn.Module`` class ``package.module:Class`` names, or a ConfigError
    naming ``net.module``."""
    found = load_target(target, "net.module")
    if not (isinstance(found, type) and issubclass(found, torch.nn.Module)):
        raise ConfigError(
            "net.module",
            f"{target} is {found!r}, not a torch.nn.Module class",
            "a subclass of torch.nn.Module",
        )
    return found


def _signature(module_class: type) -> str:
    try:
        return str(inspect.signature(module_class))[1:-1]
    except (TypeError, ValueError):
        return "..."
