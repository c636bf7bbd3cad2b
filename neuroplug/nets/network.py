"""The interface of a policy network as neuroplug uses it: math on flat parameters."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import torch

from neuroplug.nets import layers as layer_table
from neuroplug.nets import virtual_batch_norm
from neuroplug.nets.layers import Layer
from neuroplug.nets.layout import ParameterLayout, Params
from neuroplug.runtime.seeds import init_generator

if TYPE_CHECKING:
    from neuroplug.config.schema import NetConfig
    from neuroplug.envs.spec import EnvSpec


class Network(ABC):
    """An architecture: its parameter layout, its layer table and its initialisation.

    Parameters are never held here; they come as rows of a ``(n, D)`` matrix, one row per
    population member, so one call evaluates n different networks.

    A subclass declares its slots (``layout``) and its forward pass as a table of layers
    (``layers``, :mod:`neuroplug.nets.layers`); the forward passes below, both torch
    backends, the Triton backend and the learners all run it from that table. Registered
    under the ``neuroplug.networks`` entry-point group (as ``mlp`` and ``nature_cnn`` are),
    it is ``net.type=<name>`` (:func:`neuroplug.experiment.network_choice.build_network` builds it with
    :meth:`from_config`).
    """

    layout: ParameterLayout
    layers: tuple[Layer, ...] = ()
    """The forward pass, in order. A network that leaves it empty overrides
    :meth:`forward_population` itself, and runs under backends that need no table."""
    input_shape: tuple[int, ...]
    output_size: int
    type_name: ClassVar[str] = ""
    """Its ``net.type`` name, as its ``neuroplug.networks`` entry point names it; empty for
    networks built only in code (tests, experiments)."""
    supports_virtual_batch_norm: ClassVar[bool] = True
    """Whether ``net.vbn`` can normalise its layers (the layer table's); where not, the
    algorithms whose papers use it run without."""
    config_class: ClassVar[type | None] = None
    """The dataclass of the settings it reads from ``net.kwargs`` (None: none); a
    ``neuroplug.network_configs`` entry point naming it lets them be checked before torch
    is imported."""
    reference_batch: torch.Tensor | None = None
    """Virtual batch norm's reference observations ``(b, *input_shape)`` as the env gives
    them (``net.vbn``): collected once per run (:mod:`neuroplug.envs.reference_batch`),
    saved in its checkpoints and set before any member runs; None without it."""
    reads_token_ids: ClassVar[bool] = False
    """Whether its observations are token ids (``net.type=causal_lm``): indices, never
    normalised (``algo.obs_norm`` passes them through)."""
    reads_features: ClassVar[bool] = False
    """Whether ``net.features`` means something to it (``net.type=module``: the width of
    an encoder's features); others refuse a nonzero value rather than ignore it."""
    reads_measurements: ClassVar[bool] = False
    """Whether it reads numbers packed below an image observation's pixels
    (:mod:`neuroplug.envs.measurements`) as numbers: others are refused on such a task
    rather than convolve them as pixels."""
    critic_shares_trunk: ClassVar[bool] = False
    """Whether an actor-critic puts its value head on this network's last hidden features
    (the Atari papers' shared trunk) rather than training a separate network of the same
    shape (:meth:`resized`), as CleanRL and RL Zoo do on vector observations."""

    @classmethod
    def from_config(cls, config: NetConfig, env: EnvSpec) -> Network:
        """This architecture for ``env``'s observations and actions, or a
        :class:`~neuroplug.errors.ConfigError` saying why it does not fit them."""
        raise NotImplementedError(f"{cls.__name__} is not built from the net config")

    @property
    def num_params(self) -> int:
        """Parameters per member."""
        return self.layout.num_params

    @property
    def feature_size(self) -> int:
        """Width of the last hidden features (the input of the last layer)."""
        return layer_table.fan_in(self.layout, self.layers[-1])

    @abstractmethod
    def initial_params(self, generator: torch.Generator) -> torch.Tensor:
        """A freshly initialised ``(D,)`` parameter vector."""

    def resized(self, output_size: int) -> Network:
        """The same architecture with ``output_size`` outputs (an actor-critic's separate
        critic is ``resized(1)``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot change its output size")

    def forward_population(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, output_size)``: row j of ``params`` applied to ``inputs[j]``."""
        return layer_table.forward_population(self.layers, self.layout, params, inputs)

    @property
    def normalized(self) -> bool:
        """Whether layers carry virtual batch norm (``net.vbn``): members then run as
        :meth:`deploy` makes them."""
        return any(layer.normalized for layer in self.layers)

    def deploy(self, params: torch.Tensor) -> torch.Tensor:
        """The parameters ``(n, D)`` the forwards run: with virtual batch norm, each row's
        reference statistics folded into its weights (:mod:`neuroplug.nets.virtual_batch_norm`);
        otherwise ``params`` itself."""
        if not self.normalized:
            return params
        return self.fold_statistics(params, self.reference_statistics(params))

    def reference_statistics(self, params: torch.Tensor) -> torch.Tensor:
        """``(n, M)``: every row's virtual batch norm statistics on :attr:`reference_batch`,
        in one batched forward (a chunk of rows at a time)."""
        if self.reference_batch is None:
            raise RuntimeError(
                f"{self.describe()} normalizes by a reference batch, and none is set "
                "(a run collects it at its start; a checkpoint carries it)"
            )
        return virtual_batch_norm.reference_statistics(
            self.layers, self.layout, params, self.reference_batch
        )

    def fold_statistics(self, params: torch.Tensor, statistics: torch.Tensor) -> torch.Tensor:
        """A copy of ``params`` ``(n, D)`` with ``statistics`` (:meth:`reference_statistics`
        of the same rows) folded into their normalized layers."""
        return virtual_batch_norm.fold_statistics(self.layers, self.layout, params, statistics)

    @property
    def state_size(self) -> int:
        """H: the width of the recurrent core's state (``net.core``), 0 without a core."""
        return layer_table.state_size(self.layout, self.layers)

    def forward_population_with_state(
        self, params: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward_population` for a network with a recurrent core: row j goes on
        from ``state[j]`` (``(n, H)``, zeros at an episode's start); returns the outputs
        and the new states."""
        return layer_table.forward_population_with_state(
            self.layers, self.layout, params, inputs, state
        )

    def forward_members(self, params: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(K, b, output_size)``: row k of ``params`` ``(K, D)`` applied to each of
        its inputs ``inputs[k]`` ``(K, b, *input)`` (a population of learners acting on
        their envs). A network without a layer table runs it through its own
        :meth:`forward_population`, one parameter row per input."""
        if self.layers:
            return layer_table.forward_members(self.layers, self.layout, params, inputs)
        members, rows = inputs.shape[:2]
        repeated = params.repeat_interleave(rows, dim=0)
        outputs = self.forward_population(
            repeated, inputs.reshape(members * rows, *inputs.shape[2:])
        )
        return outputs.reshape(members, rows, -1)

    def forward_single(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs ``(b, output_size)`` of one parameter set on a batch of inputs: a flat
        ``(D,)`` vector, or its named tensors (``layout.split``), which learners train.

        The per-member reference the batched forward is tested against.
        """
        return layer_table.forward_single(self.layers, self.layout, params, inputs)

    def features(self, params: Params, inputs: torch.Tensor) -> torch.Tensor:
        """The last hidden features (every layer but the last) of one parameter set."""
        return layer_table.forward_single(self.layers[:-1], self.layout, params, inputs)

    def head(self, params: Params, features: torch.Tensor) -> torch.Tensor:
        """The last layer of one parameter set on :meth:`features`."""
        return layer_table.forward_single(self.layers[-1:], self.layout, params, features)

    def features_with_state(
        self, params: Params, inputs: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`features` of one parameter set continuing from its recurrent ``state``
        ``(b, H)`` (None: zeros, or a network without a core); returns the features and
        the new state (None without a core). An actor-critic's shared trunk."""
        return layer_table.forward_single_with_state(
            self.layers[:-1], self.layout, params, inputs, state
        )

    def features_members_with_state(
        self, params: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """:meth:`features_with_state` of rows ``params`` ``(K, D)``, each on its inputs
        ``inputs[k]`` ``(K, b, *input)`` and states ``state[k]`` ``(K, b, H)`` (None: zeros):
        ``(K, b, feature_size)`` and the new states."""
        return layer_table.forward_members_with_state(
            self.layers[:-1], self.layout, params, inputs, state
        )

    def head_members(self, params: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """:meth:`head` of rows ``params`` ``(K, D)``, each on its features ``(K, b, F)``."""
        return layer_table.forward_members(self.layers[-1:], self.layout, params, features)

    def example_inputs(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` random inputs as the env gives them, for tests and benchmarks: uint8
        frames for image shapes ``(C, H, W)``, standard normal vectors otherwise."""
        shape = (count, *self.input_shape)
        if len(self.input_shape) == 3:
            return torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)
        return torch.randn(shape, generator=generator)

    @abstractmethod
    def describe(self) -> str:
        """One line for logs: the architecture and its parameter count."""


@dataclass(frozen=True)
class SeededInitializer:
    """``seed -> network.initial_params(seed)`` as a picklable callable, so populations of
    fresh draws can travel as seeds (to another process or machine) and be rebuilt there."""

    network: Network

    def __call__(self, seed: int) -> torch.Tensor:
        return self.network.initial_params(init_generator(seed)).float()


def normc_(weight: torch.Tensor, std: float, generator: torch.Generator) -> torch.Tensor:
    """OpenAI ES's ``normc`` init: Gaussian columns rescaled to norm ``std`` per output unit."""
    weight.normal_(generator=generator)
    weight *= std / weight.pow(2).sum(dim=0, keepdim=True).sqrt()
    return weight
