"""An actor-critic around neuroplug's policy network.

The actor *is* the policy network: it trains the network's named tensors (one parameter
each, so a gradient step costs no slicing of a flat vector) and deploys them joined into
the network's flat layout (:meth:`ActorCritic.policy_vector`), which runs unchanged through
every backend and the evolution side's evaluation (discrete actions: the argmax of the
logits; continuous: the squashed mean).
The critic is read from the network's description
(:attr:`neuroplug.nets.network.Network.critic_shares_trunk`): a linear head on the last
hidden features where the network shares its trunk (the Nature CNN's 512 features: the
Atari papers), else a second network of the same shape with one output (the MLP on
vector observations, as CleanRL and RL Zoo do on classic control).

Continuous actions are Gaussian in the pre-squash space ``u`` with a learned,
state-independent log-std; the env receives ``low + (tanh(u) + 1) / 2 * (high - low)``,
exactly as :class:`neuroplug.nets.policy.Policy` maps the deployed mean. The likelihood
ratio is the same in ``u`` as in the squashed action (the Jacobian cancels), so no
correction term is needed. The distributions and their gradients are in
:mod:`neuroplug.rl.distributions`.

A network with a recurrent core (``net.core=gru``) shares it between actor and critic, as
Sample Factory does: the value head reads the core's output. It acts one step at a time
from each env's state (:meth:`ActorCritic.act` with ``states``), and learns by re-running
the core over chunks of a rollout from the states stored at their starts
(:meth:`ActorCritic.sequence_for_gradients`, truncated backpropagation through time).

A gradient step asks :meth:`ActorCritic.forward_for_gradients` for the outputs and a
backward function: an MLP actor with its separate MLP critic is differentiated by the
written-out backward pass of linear layers (:mod:`neuroplug.nets.gradients`), any other
network by autograd; there the encoder may train in bfloat16 under autocast
(``algo.encoder_precision``, :meth:`ActorCritic.train_encoder_in`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError
from neuroplug.nets import gradients
from neuroplug.nets import layers as layer_table
from neuroplug.nets.layers import is_recurrent
from neuroplug.nets.network import Network
from neuroplug.rl.distributions import Categorical, DiagonalGaussian
from neuroplug.runtime.devices import has_native_bfloat16
from neuroplug.runtime.seeds import value_head_generator

if TYPE_CHECKING:
    from neuroplug.api import LearnerContext


@dataclass
class OutputGradients:
    """A loss's gradient with respect to an actor-critic's outputs: what a learner's loss
    hands to the backward pass of :meth:`ActorCritic.forward_for_gradients`."""

    outputs: torch.Tensor
    """``(n, out)``: with respect to the logits or means."""
    values: torch.Tensor
    """``(n,)``: with respect to the values."""
    log_std: torch.Tensor | None
    """``(actions,)`` for a Gaussian policy, else None."""


class ActorCritic(nn.Module):
    """Policy logits (or means) and state values from one set of trainable parameters."""

    def __init__(
        self, network: Network, env: EnvSpec, initial_params: torch.Tensor, seed: int
    ) -> None:
        super().__init__()
        self.network = network
        self.env = env
        self._named: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]] | None = None
        self.actor = _trainable(network.layout.split(initial_params.detach().float()))
        self._actor_names = list(network.layout.slots)
        generator = value_head_generator(seed)
        self.recurrent = network.state_size > 0
        # A recurrent core is shared: the critic reads the same state the actor keeps.
        self.shared_trunk = network.critic_shares_trunk or self.recurrent
        if self.shared_trunk:
            features = network.feature_size
            self.value_head = nn.Linear(features, 1)
            with torch.no_grad():
                self.value_head.weight.normal_(0.0, 1.0 / np.sqrt(features), generator=generator)
                self.value_head.bias.zero_()
        else:
            self.critic = network.resized(1)
            params = self.critic.initial_params(generator)
            if self.critic.layers:
                last = self.critic.layout.slots[self.critic.layers[-1].weight]
                # A unit-scale value layer: returns are far from 0 at the start (the table's
                # output layer is initialised small, for near-uniform initial actions; a
                # module network keeps its own initialisation).
                params[last.offset : last.offset + last.size] *= 100.0
            self.critic_layers = _trainable(self.critic.layout.split(params))
            self._critic_names = list(self.critic.layout.slots)
        self.log_std = nn.Parameter(torch.zeros(env.num_actions)) if not env.discrete else None
        self._written_out = not self.shared_trunk and all(
            gradients.written_out(net.layers) for net in (network, self.critic)
        )
        self.encoder_autocast: torch.dtype | None = None
        """Where set (``algo.encoder_precision=bfloat16``), the encoder's forward and
        backward in training run under autocast to this dtype (:meth:`_encode`)."""

    @classmethod
    def for_learner(cls, context: LearnerContext) -> ActorCritic:
        """The actor-critic of a learner's run: its network, env, initial policy and seed."""
        return cls(context.network, context.env, context.initial_params, context.seed)

    def policy_tensors(self) -> dict[str, torch.Tensor]:
        """The actor's trainable tensors by the network's slot names."""
        return self._named_tensors()[0]

    def _named_tensors(self) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """The actor's and the separate critic's tensors by slot name, built once, not per
        forward: indexing a ParameterList costs a Python call per tensor, noticeable in a
        small network's update."""
        if self._named is None:
            actor = dict(zip(self._actor_names, list(self.actor), strict=True))
            critic = (
                {}
                if self.shared_trunk
                else dict(zip(self._critic_names, list(self.critic_layers), strict=True))
            )
            self._named = (actor, critic)
        return self._named

    def _apply(self, fn, recurse=True):
        # Moving the module may swap its parameters for new tensors: name them again.
        self._named = None
        return super()._apply(fn, recurse)

    def policy_vector(self) -> torch.Tensor:
        """The actor as the network's flat ``(D,)`` parameter vector: what is deployed."""
        with torch.no_grad():
            return self.network.layout.join(self.policy_tensors())

    @property
    def written_out(self) -> bool:
        """Whether :meth:`forward_for_gradients` differentiates by the written-out pass (an
        MLP actor and a separate MLP critic) rather than autograd."""
        return self._written_out

    def critic_tensors(self) -> dict[str, torch.Tensor]:
        """The separate critic's trainable tensors by its network's slot names (empty with
        a shared trunk)."""
        return self._named_tensors()[1]

    def critic_vector(self) -> torch.Tensor:
        """The separate critic as its network's flat ``(D,)`` vector (a shared-trunk
        actor-critic has none: its value head is ``value_head``)."""
        with torch.no_grad():
            return self.critic.layout.join(self.critic_tensors())

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(outputs (n, out), values (n,))`` (a recurrent core from zero states)."""
        policy, critic = self._named_tensors()
        if self.recurrent:
            states = torch.zeros(
                (len(observations), self.network.state_size), device=observations.device
            )
            outputs, values, _ = self.step(observations, states)
            return outputs, values
        if self.shared_trunk:
            features = self._encode(policy, observations)
            return self.network.head(policy, features), self.value_head(features).squeeze(1)
        outputs = self.network.forward_single(policy, observations)
        values = self.critic.forward_single(critic, observations).squeeze(1)
        return outputs, values

    def step(
        self, observations: torch.Tensor, states: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of a recurrent actor-critic from core ``states`` ``(n, H)``:
        ``(outputs, values, new states)``."""
        policy, _ = self._named_tensors()
        # The encoder and the core.
        features, new_states = self.network.features_with_state(policy, observations, states)
        outputs = self.network.head(policy, features)
        return outputs, self.value_head(features).squeeze(1), new_states

    def sequence(
        self, observations: torch.Tensor, states: torch.Tensor, starts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Outputs ``(L, B, out)``, values ``(L, B)`` and the final core states ``(B, H)`` of
        ``B`` envs' ``L`` consecutive steps ``observations`` ``(L, B, *obs)``: the encoder on
        all of them at once, then the core step by step from ``states`` ``(B, H)``, zeroed
        where ``starts`` ``(L, B)`` begins an episode, then the layers after it on all at
        once."""
        policy, _ = self._named_tensors()
        layers, layout = self.network.layers, self.network.layout
        steps, envs = starts.shape
        if not layers:
            return self._module_sequence(policy, observations, states, starts)
        core = next(i for i, layer in enumerate(layers) if is_recurrent(layer.kind))
        encoded = self._encode(
            policy, observations.reshape(steps * envs, *observations.shape[2:]), layers[:core]
        ).reshape(steps, envs, -1)
        keep = (~starts).unsqueeze(2)
        features, states = layer_table.core_sequence(
            layers[core], layout, policy, encoded, states, keep
        )
        flat = features.reshape(steps * envs, -1)
        flat = layer_table.forward_single(layers[core + 1 : -1], layout, policy, flat)
        outputs = self.network.head(policy, flat).reshape(steps, envs, -1)
        return outputs, self.value_head(flat).reshape(steps, envs), states

    def _module_sequence(
        self,
        policy: dict[str, torch.Tensor],
        observations: torch.Tensor,
        states: torch.Tensor,
        starts: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`sequence` for a recurrent module encoder (``net.type=module``): its
        forward is one call from observations and state to features and state, so it runs
        step by step whole (a layer table runs only its core step by step)."""
        steps, envs = starts.shape
        keep = (~starts).unsqueeze(2).to(states.dtype)
        features = []
        for step in range(steps):
            hidden, states = self.network.features_with_state(
                policy, observations[step], states * keep[step]
            )
            features.append(hidden)
        flat = torch.stack(features).reshape(steps * envs, -1)
        outputs = self.network.head(policy, flat).reshape(steps, envs, -1)
        return outputs, self.value_head(flat).reshape(steps, envs), states

    def train_encoder_in(self, precision: str) -> str:
        """Train the encoder in ``precision`` (``algo.encoder_precision``: ``float32``,
        ``bfloat16`` under autocast, or ``auto``: bfloat16 where it was measured faster, a
        convolutional encoder on a CPU that computes bfloat16 natively, else float32);
        returns what the start-up line says of it. ``bfloat16`` is refused
        (:class:`ConfigError`) where the actor-critic is differentiated by the written-out
        pass, which has no autocast."""
        device = next(self.parameters()).device
        if precision == "auto":
            chosen = (
                "bfloat16"
                if self.shared_trunk
                and not self._written_out
                and device.type == "cpu"
                and has_native_bfloat16(device)
                else "float32"
            )
            note = self.train_encoder_in(chosen)
            return f"{note} (algo.encoder_precision=auto; float32 pins it)" if note else ""
        if precision == "float32":
            self.encoder_autocast = None
            return ""
        if self._written_out:
            raise ConfigError(
                "algo.encoder_precision",
                f"{precision} runs the encoder under autograd's autocast; this MLP actor "
                "and critic train by the written-out backward pass, in float32 (reduced "
                "precision pays off for convolutional encoders: net.type=nature_cnn)",
                "float32",
            )
        if not self.shared_trunk:
            raise ConfigError(
                "algo.encoder_precision",
                f"{precision} runs a shared encoder under autocast, and "
                f"{self.network.describe()} trains as a separate actor and critic, in float32",
                "float32 (reduced precision pays off for convolutional encoders: "
                "net.type=nature_cnn)",
            )
        self.encoder_autocast = getattr(torch, precision)
        if has_native_bfloat16(device):
            return f"the encoder trains in {precision} (autocast; native on this {device.type})"
        return (
            f"the encoder trains in {precision} (autocast), which this {device.type} emulates: "
            "slower than float32 here (algo.encoder_precision=float32)"
        )

    def _encode(
        self, policy: dict[str, torch.Tensor], observations: torch.Tensor, layers=None
    ) -> torch.Tensor:
        """The encoder's float32 features of ``observations``: the layer table's ``layers``
        where given, else the network's :meth:`~neuroplug.nets.network.Network.features`
        (every layer but the head). In training, with
        :attr:`encoder_autocast` set, its forward runs under autocast (its backward follows
        in the same dtype): mixed precision, the weights stay float32. Acting and the
        targets' forward (no gradients) keep float32."""
        layout = self.network.layout

        def encode() -> torch.Tensor:
            if layers is None:
                return self.network.features(policy, observations)
            return layer_table.forward_single(layers, layout, policy, observations)

        dtype = self.encoder_autocast
        if dtype is None or not (self.training and torch.is_grad_enabled()):
            return encode()
        with torch.autocast(observations.device.type, dtype=dtype):
            features = encode()
        return features.float()

    def sequence_for_gradients(
        self,
        observations: torch.Tensor,
        states: torch.Tensor,
        starts: torch.Tensor,
        rows: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, Callable[[OutputGradients], None]]:
        """:meth:`forward_for_gradients` for a recurrent actor-critic on chunks of steps
        (:meth:`sequence`): the outputs and values of the flattened ``(L * B)`` steps
        ``rows`` (the valid ones), and the backward function through the whole chunks
        (autograd: truncated backpropagation through time)."""
        outputs, values, _ = self.sequence(observations, states, starts)
        outputs = outputs.reshape(-1, outputs.shape[-1])[rows]
        values = values.reshape(-1)[rows]

        def autograd_backward(grads: OutputGradients) -> None:
            torch.autograd.backward((outputs, values), (grads.outputs, grads.values))
            self._add_log_std_gradient(grads)

        return outputs, values, autograd_backward

    def distribution(self, outputs: torch.Tensor) -> Categorical | DiagonalGaussian:
        """The action distribution of policy ``outputs`` (logits, or Gaussian means)."""
        if self.env.discrete:
            return Categorical(outputs)
        return DiagonalGaussian(outputs, self.log_std)

    def log_prob_and_entropy(
        self, outputs: torch.Tensor, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-likelihood of ``actions`` and the entropy, per row."""
        distribution = self.distribution(outputs)
        return distribution.log_prob(actions), distribution.entropy()

    def forward_for_gradients(
        self, observations: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, Callable[[OutputGradients], None]]:
        """``(outputs, values, backward)``: :meth:`forward`, and a function that takes a
        loss's gradient with respect to the outputs, values and log-std and leaves the
        gradient of every trained tensor in its ``grad``. Zero the gradients before calling
        it: autograd adds to them, the written-out pass overwrites them.

        An actor and a separate critic made of linear layers (the MLP on vector tasks) are
        differentiated by the written-out backward pass (:mod:`neuroplug.nets.gradients`),
        with no autograd graph; other networks go through autograd."""
        if not self._written_out:
            outputs, values = self(observations)

            def autograd_backward(grads: OutputGradients) -> None:
                torch.autograd.backward((outputs, values), (grads.outputs, grads.values))
                self._add_log_std_gradient(grads)

            return outputs, values, autograd_backward
        policy, critic = self._named_tensors()
        actor_net, critic_net = self.network, self.critic
        outputs, actor_inputs = gradients.forward(
            actor_net.layers, actor_net.layout, policy, observations
        )
        values, critic_inputs = gradients.forward(
            critic_net.layers, critic_net.layout, critic, observations
        )

        def written_out_backward(grads: OutputGradients) -> None:
            for net, tensors, inputs, out, grad in (
                (actor_net, policy, actor_inputs, outputs, grads.outputs),
                (critic_net, critic, critic_inputs, values, grads.values.unsqueeze(1)),
            ):
                into = {name: _grad_of(tensor) for name, tensor in tensors.items()}
                gradients.backward(net.layers, net.layout, tensors, inputs, out, grad, into)
            self._add_log_std_gradient(grads)

        return outputs, values.squeeze(1), written_out_backward

    def _add_log_std_gradient(self, grads: OutputGradients) -> None:
        if grads.log_std is not None:
            _grad_of(self.log_std).add_(grads.log_std)


def env_actions(env: EnvSpec, actions: torch.Tensor) -> np.ndarray:
    """What ``env`` receives for an actor-critic's sampled ``actions``: the indices of
    discrete actions; continuous ones squashed by tanh into the action box."""
    if env.discrete:
        return actions.cpu().numpy().astype(np.int32)
    unit = torch.tanh(actions).cpu().numpy()
    low, high = env.action_low, env.action_high
    return (low + (unit + 1.0) * 0.5 * (high - low)).astype(np.float32)


def _grad_of(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor.grad``, a zero one made first if it has none."""
    if tensor.grad is None:
        tensor.grad = torch.zeros_like(tensor)
    return tensor.grad


def _trainable(tensors: dict[str, torch.Tensor]) -> nn.ParameterList:
    """One trainable copy of each named tensor, in order (module names cannot hold the
    dots of slot names such as ``conv0.w``, so the names live beside the list)."""
    return nn.ParameterList(nn.Parameter(tensor.detach().clone()) for tensor in tensors.values())
