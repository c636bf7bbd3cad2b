"""Any ``torch.nn.Module`` as a population of networks (``net.type=module``).

The module's parameters, in ``named_parameters()`` order, are the flat layout: member i is
a row of the population's ``(n, D)`` matrix like any network's, so the Population, the
noise, seed-chain genomes, checkpoints and every algorithm work unchanged. The forward of
many different members is one batched computation: ``torch.func.functional_call`` of the
module on a member's tensors, vectorised over members by ``torch.func.vmap`` (the
founding idea of batching a population of different networks, without a hand-written
layer table).

Two ways to build it (``net.features``):

- ``0`` (the default): the module is the whole policy, ``Module(observation_shape,
  outputs, **net.kwargs)``; learners train a second module of the same class with one
  output as the critic.
- ``N > 0``: the module is an *encoder* ``Module(observation_shape, N, **net.kwargs)``
  returning ``(b, N)`` features, and neuroplug adds the head: a linear output layer
  (``head.weight``, ``head.bias``, initialised orthogonal with gain 0.01, near-uniform
  first actions), and for actor-critic learners a value head on the same features (the
  Atari papers' shared trunk). The encoder's parameters are named ``encoder.<name>``.

``observation_shape`` is the env's (``(C, H, W)`` frames, ``(n,)`` vectors); ``forward``
takes a batch ``(b, *observation_shape)`` of float32 observations (uint8 frames scaled to
[0, 1]).

**Recurrent modules.** A module with an integer attribute ``state_size`` H > 0 is
recurrent: its forward is ``forward(observations, state) -> (features, new_state)`` with
``state`` ``(b, H)`` float32, zeros at each episode's first step (neuroplug keeps one state
per env and per member, and zeroes it where an episode ends, as for ``net.core=gru``).
Pack an LSTM's two states into one tensor. As an encoder (``net.features > 0``) learners
train it by truncated backpropagation through time over rollout chunks, stepping the
whole module once per step; as a whole policy (``net.features=0``: it returns the
outputs and its state, a language model's logits and KV cache) it is evolution's only.

A fresh member is the module built again under a seed drawn from the member's generator,
so its own initialisation is the distribution fresh draws come from. Buffers (BatchNorm's
running statistics) and parameters that are not floating point are refused naming them: a
member is its parameters alone.

A module that is only linear layers and element-wise activations (``nn.Sequential`` of
``nn.Linear`` and ``nn.Tanh``, say) on vector observations runs without ``functional_call``:
one batched product per layer over the members, as the layer table runs its MLP
(:mod:`neuroplug.nets.module_chain`); the same operations, at the table's speed.

What the layer table gives and a module does not (yet): the Triton kernels, factored
low-rank forwards beyond ``nn.Linear``, ``nn.Embedding`` and ``nn.LayerNorm`` (a
feed-forward module of those alone runs factored with ``algo.perturbation=lowrank``:
``neuroplug_backends.module_lowrank``; others' perturbed matrices and convolution kernels
are materialised), virtual batch norm, PBT's stacked update (its members
then learn one by one) and the written-out gradients; a run that asks for one of these is
refused naming the setting, or runs the general path.
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
from neuroplug.nets.attention import batched_attention
from neuroplug.nets.layers import as_float, trains_faster_channels_last
from neuroplug.nets.layout import ParameterLayout, Params
from neuroplug.nets.module_chain import ChainLayer, linear_chain, run_chain, run_chain_members
from neuroplug.nets.network import Network


class _EncoderWithHead(torch.nn.Module):
    """A user's encoder and neuroplug's linear output layer, one module (so its
    parameters are one flat layout): ``forward(x, state, part)`` runs all of it, the
    encoder alone (``part="features"``) or the head alone on features (``part="head"``)."""

    def __init__(self, encoder: torch.nn.Module, features: int, outputs: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.state_size = int(getattr(encoder, "state_size", 0) or 0)
        self.head = torch.nn.Linear(features, outputs)
        torch.nn.init.orthogonal_(self.head.weight, gain=0.01)
        torch.nn.init.zeros_(self.head.bias)

    def forward(
        self, x: torch.Tensor, state: torch.Tensor | None = None, part: str = "all",
        window: int | None = None,
    ):  # fmt: skip
        if part == "head":
            return self.head(x)
        if not self.state_size:
            features = self.encoder(x)
            return features if part == "features" else self.head(features)
        if state is None:
            state = x.new_zeros((x.shape[0], self.state_size))
        window_given = {} if window is None else {"window": window}
        features, new_state = self.encoder(x, state, **window_given)
        return (features if part == "features" else self.head(features)), new_state


class ModuleNetwork(Network):
    """A ``torch.nn.Module`` class (``net.module``) as a :class:`Network` over flat
    parameters; see the module docstring."""

    type_name = "module"
    reads_features = True
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
        features: int = 0,
        lower_chains: bool = True,
    ) -> None:
        self.module_class = module_class
        self.input_shape = tuple(input_shape)
        self.output_size = output_size
        self.kwargs = dict(kwargs or {})
        self.name = name or getattr(module_class, "__qualname__", str(module_class))
        self.encoder_features = int(features)
        self.module = self._build()
        self.recurrent_size = int(getattr(self.module, "state_size", 0) or 0)
        stepping = self.module.encoder if self.encoder_features else self.module
        self.step_window: Callable[[torch.Tensor, torch.Tensor | None], int] | None = getattr(
            stepping, "step_window", None
        )
        """A recurrent module's width of a step's block of inputs, given the whole batch
        (:func:`neuroplug.nets.kv_cache.step_window`, a KV-cached language model's): taken
        before a vmapped call, which cannot branch on values, and passed in as
        ``window``; None: the module takes none."""
        self.critic_shares_trunk = self.encoder_features > 0
        self.layout = ParameterLayout(
            [(name, tuple(tensor.shape)) for name, tensor in self.module.named_parameters()]
        )
        self.layers = ()
        self.lower_chains = lower_chains
        self.chain = self._linear_chain() if lower_chains else None
        """The module as linear layers and activations (:mod:`neuroplug.nets.module_chain`),
        run without ``functional_call``; ``None``: the general path."""

    def _linear_chain(self) -> list[ChainLayer] | None:
        if len(self.input_shape) != 1 or self.recurrent_size:
            return None  # a linear layer on frames acts on their last axis: not a chain
        if not self.encoder_features:
            return linear_chain(self.module)
        encoder = linear_chain(self.module.encoder, "encoder.")
        return encoder and [*encoder, ChainLayer("head.weight", "head.bias")]

    def _build(self) -> torch.nn.Module:
        if not self.encoder_features:
            return self.module_class(self.input_shape, self.output_size, **self.kwargs).eval()
        encoder = self.module_class(self.input_shape, self.encoder_features, **self.kwargs)
        return _EncoderWithHead(encoder, self.encoder_features, self.output_size).eval()

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
        width = config.features or env.num_actions
        try:
            network = cls(
                module_class, env.obs_shape, env.num_actions, kwargs, config.module, config.features
            )
        except TypeError as error:
            raise ConfigError(
                "net.kwargs",
                f"{config.module}({_signature(module_class)}) refused "
                f"(observation_shape={env.obs_shape}, "
                f"{'features' if config.features else 'outputs'}={width}"
                + "".join(f", {key}={value!r}" for key, value in kwargs.items())
                + f"): {error}",
                "net.kwargs the constructor takes after (observation_shape, outputs)",
            ) from None
        network.check_module(config.module)
        return network

    def check_module(self, field_value: str) -> None:
        """Refuse, naming the part, what a member's flat parameters cannot hold, and an
        output of the wrong shape."""
        # A buffer left out of the state dict (a rotary embedding's frequencies) is a
        # constant its construction recomputes; one kept in it is state no member carries.
        parameters = {name for name, _ in self.module.named_parameters(remove_duplicate=False)}
        buffers = [name for name in self.module.state_dict() if name not in parameters]
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
        self._check_outputs(field_value)

    def _check_outputs(self, field_value: str) -> None:
        probe = torch.zeros((2, *self.input_shape))
        width = self.encoder_features or self.output_size
        what = "features" if self.encoder_features else "outputs"
        with torch.no_grad():
            try:
                if self.encoder_features:
                    result = self.module(probe, None, "features")
                elif self.recurrent_size:
                    result = self.module(probe, probe.new_zeros((2, self.recurrent_size)))
                else:
                    result = self.module(probe)
            except Exception as error:
                takes = "(batch, *observation_shape)" + (
                    f" and a state (batch, {self.recurrent_size})" if self.recurrent_size else ""
                )
                raise ConfigError(
                    "net.module",
                    f"{field_value} failed on a batch of shape {tuple(probe.shape)}: "
                    f"{type(error).__name__}: {error}",
                    f"a forward taking {takes}",
                ) from None
        state = None
        if self.recurrent_size:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise ConfigError(
                    "net.module",
                    f"{field_value} has state_size={self.recurrent_size} and returned "
                    f"{type(result).__name__}",
                    "a recurrent forward returning (features, new_state)",
                )
            result, state = result
        if tuple(getattr(result, "shape", ())) != (2, width):
            raise ConfigError(
                "net.module",
                f"{field_value} returned {tuple(getattr(result, 'shape', ()))} for a batch "
                f"of 2 observations; expected (2, {width})",
                f"(batch, {what}): one row per observation"
                + (
                    ""
                    if self.encoder_features
                    else " (or set net.features to use it as an encoder)"
                ),
            )
        if state is not None and tuple(state.shape) != (2, self.recurrent_size):
            raise ConfigError(
                "net.module",
                f"{field_value} returned a state of shape {tuple(state.shape)} for a batch of "
                f"2; expected (2, {self.recurrent_size}) (its state_size)",
                "a new state (batch, state_size)",
            )

    def place_constants(self, device: torch.device) -> None:
        """Move the module's buffers (constants beside its parameters: a rotary embedding's
        frequencies) to ``device``, where its forward runs; its own parameters stay where
        they are, since every call passes a member's."""
        for module in self.module.modules():
            for key, buffer in module._buffers.items():
                if buffer is not None and buffer.device != torch.device(device):
                    module._buffers[key] = buffer.to(device)

    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        # The module's own initialisation, under a seed the member's generator draws.
        seed = int(torch.randint(0, 2**31 - 1, (), generator=generator))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            fresh = self._build()
        return torch.cat([tensor.detach().reshape(-1).float() for tensor in fresh.parameters()])

    def resized(self, output_size: int) -> ModuleNetwork:
        return ModuleNetwork(
            self.module_class,
            self.input_shape,
            output_size,
            self.kwargs,
            self.name,
            self.encoder_features,
            self.lower_chains,
        )

    @property
    def feature_size(self) -> int:
        """The encoder's features (``net.features``); a whole-policy module has none
        apart from its outputs."""
        return self.encoder_features or self.output_size

    @property
    def state_size(self) -> int:
        """H: a recurrent encoder's ``state_size``, 0 for a feed-forward module."""
        return self.recurrent_size

    def _tensors(self, params: Params) -> dict[str, torch.Tensor]:
        return dict(params) if not isinstance(params, torch.Tensor) else self.layout.split(params)

    def _call(
        self,
        tensors: dict[str, torch.Tensor],
        inputs: torch.Tensor,
        state: torch.Tensor | None = None,
        part: str = "all",
        window: int | None = None,
    ):
        given = {} if window is None else {"window": window}
        if not self.encoder_features:
            if not self.recurrent_size:
                return functional_call(self.module, tensors, (inputs,))
            if state is None:  # an episode's start, and only the outputs wanted
                zeros = inputs.new_zeros((inputs.shape[0], self.recurrent_size))
                return functional_call(self.module, tensors, (inputs, zeros), given)[0]
            return functional_call(self.module, tensors, (inputs, state), given)
        outputs = functional_call(self.module, tensors, (inputs, state, part), given)
        # A recurrent module's call returns (outputs, new state): without a state asked
        # for, the outputs alone.
        return outputs[0] if self.recurrent_size and state is None else outputs

    def _window(self, inputs: torch.Tensor, state: torch.Tensor | None) -> int | None:
        """:attr:`step_window` of a vmapped call's whole batch (no state: an episode's start)."""
        return None if self.step_window is None else self.step_window(inputs, state)

    def _inputs(self, inputs: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
        if inputs.dim() == 4 and trains_faster_channels_last(inputs, params):
            # The layer table's choice for a learner's convolutions (layers.py), made for the
            # module's: frames laid out channels-last (as bytes, before their conversion),
            # which its convolutions then keep.
            inputs = inputs.contiguous(memory_format=torch.channels_last)
        return as_float(inputs, params.dtype) if inputs.dtype != params.dtype else inputs

    def _vmap(self, function):
        """``vmap(function)``, its module's attention written out while it runs
        (:func:`~neuroplug.nets.attention.batched_attention`: vmap has no batching rule for
        PyTorch's fused attention and would loop over the members)."""
        mapped = vmap(function)

        def run(*args):
            with batched_attention(self.module):
                return mapped(*args)

        return run

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Row j of ``params`` ``(n, D)`` on ``inputs[j]``: one vectorised call."""
        if len(params) == 0:
            return params.new_zeros((0, self.output_size))
        tensors = self.layout.views(params)
        inputs = self._inputs(inputs, params)
        if self.chain:
            return run_chain_members(self.chain, tensors, inputs.unsqueeze(1)).squeeze(1)
        window = self._window(inputs, None)
        one = self._vmap(
            lambda member, x: self._call(member, x.unsqueeze(0), window=window).squeeze(0)
        )
        return one(tensors, inputs)

    def forward_population_with_state(
        self, params: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Row j of ``params`` on ``inputs[j]`` from its state ``state[j]``."""
        if len(params) == 0:
            return params.new_zeros((0, self.output_size)), state
        tensors = self.layout.views(params)
        inputs = self._inputs(inputs, params)
        window = self._window(inputs, state)

        def one(member, x, s):
            outputs, new_state = self._call(member, x.unsqueeze(0), s.unsqueeze(0), window=window)
            return outputs.squeeze(0), new_state.squeeze(0)

        return self._vmap(one)(tensors, inputs, state)

    def forward_members(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Row k of ``params`` ``(K, D)`` on its inputs ``inputs[k]`` ``(K, b, *obs)``."""
        tensors = self.layout.views(params)
        if self.chain:
            return run_chain_members(self.chain, tensors, self._inputs(inputs, params))
        inputs = self._inputs(inputs, params)
        window = self._window(inputs, None)
        return self._vmap(lambda member, x: self._call(member, x, window=window))(tensors, inputs)

    def forward_single(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        tensors = self._tensors(params)
        inputs = self._inputs(inputs, next(iter(tensors.values())))
        if self.chain:
            return run_chain(self.chain, tensors, inputs)
        return self._call(tensors, inputs)

    def features(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """The encoder's features (a recurrent one's from zero states)."""
        return self.features_with_state(params, inputs, None)[0]

    def features_with_state(
        self, params: Params, inputs: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        self._require_encoder("features")
        tensors = self._tensors(params)
        inputs = self._inputs(inputs, next(iter(tensors.values())))
        if self.chain:
            return run_chain(self.chain[:-1], tensors, inputs), None
        if not self.recurrent_size:
            return self._call(tensors, inputs, None, "features"), None
        if state is None:
            state = inputs.new_zeros((inputs.shape[0], self.recurrent_size))
        return self._call(tensors, inputs, state, "features")

    def features_members_with_state(
        self, params: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        self._require_encoder("features")
        tensors = self.layout.views(params)
        inputs = self._inputs(inputs, params)
        if self.chain:
            return run_chain_members(self.chain[:-1], tensors, inputs), None
        if not self.recurrent_size:
            return self._vmap(lambda member, x: self._call(member, x, None, "features"))(
                tensors, inputs
            ), None
        if state is None:
            state = inputs.new_zeros((*inputs.shape[:2], self.recurrent_size))
        window = self._window(inputs, state)
        return self._vmap(lambda member, x, s: self._call(member, x, s, "features", window))(
            tensors, inputs, state
        )

    def head(self, params: Params, features: torch.Tensor) -> torch.Tensor:
        self._require_encoder("head")
        tensors = self._tensors(params)
        return torch.nn.functional.linear(features, tensors["head.weight"], tensors["head.bias"])

    def head_members(self, params: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        self._require_encoder("head")
        tensors = self.layout.views(params)
        weight, bias = tensors["head.weight"], tensors["head.bias"]
        return torch.baddbmm(bias.unsqueeze(1), features, weight.transpose(1, 2))

    def _require_encoder(self, part: str) -> None:
        if not self.encoder_features:
            raise TypeError(
                f"{self.describe()} is a whole policy (net.features=0): it has no {part} of its own"
            )

    def describe(self) -> str:
        recurrent = f", recurrent (state {self.recurrent_size})" if self.recurrent_size else ""
        role = (
            f"encoder of {self.encoder_features} features and a linear head"
            if self.encoder_features
            else "whole policy"
        ) + recurrent
        path = "linear layers batched over members" if self.chain else "torch.func over members"
        return f"module {self.name} ({role}; {path}), {self.num_params:,} params"


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
    """The constructor's parameters as written (``in_features: int, ...``), without the
    parentheses or a return annotation."""
    try:
        signature = inspect.signature(module_class)
    except (TypeError, ValueError):
        return "..."
    return str(signature.replace(return_annotation=inspect.Signature.empty))[1:-1]
