"""What ``td3`` and ``sac`` (and the hybrids' TD3) share: twin critics as one stacked
computation, target-network updates and random actions before learning. Their loop is the
replay loop (:mod:`neuroplug.rl.replay`).

Actions are kept as the policy emits them, before the squash (``rollout.actions``); the
envs receive ``tanh`` of them scaled into the box (:func:`neuroplug.rl.actor_critic.
env_actions`), and the critics read the squashed, unit-box action ``tanh(a)`` in [-1, 1].
"""

from __future__ import annotations

import math

import torch

from neuroplug.nets import gradients
from neuroplug.nets.layers import LINEAR, Layer

UNIT_EDGE = 1 - 1e-6
"""Unit actions are kept inside (-1, 1) so that their atanh (the stored action) is finite."""


class TwinCritic(torch.nn.Module):
    """Two Q(s, a) MLPs (ReLU, ``hidden`` widths) whose weights are stacked ``(2, in, out)``:
    both critics in one batched product per layer, as PBT stacks its members. Initialised
    as ``nn.Linear`` is (uniform in +-1/sqrt(fan_in)), from ``generator``."""

    def __init__(
        self, inputs: int, hidden: list[int], generator: torch.Generator, critics: int = 2
    ) -> None:
        super().__init__()
        widths = [inputs, *[int(width) for width in hidden], 1]
        self.weights = torch.nn.ParameterList()
        self.biases = torch.nn.ParameterList()
        for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
            bound = 1 / math.sqrt(fan_in)
            weight = (torch.rand(critics, fan_in, fan_out, generator=generator) * 2 - 1) * bound
            bias = (torch.rand(critics, 1, fan_out, generator=generator) * 2 - 1) * bound
            self.weights.append(torch.nn.Parameter(weight))
            self.biases.append(torch.nn.Parameter(bias))
        last = len(widths) - 2
        self.layers = [
            Layer(LINEAR, f"weight{i}", f"bias{i}", "relu" if i < last else "identity")
            for i in range(last + 1)
        ]
        """The critics as a layer table, for the written-out passes of
        :mod:`neuroplug.nets.gradients` (slot ``weight{i}``: ``weights[i]``)."""

    def forward(self, observations: torch.Tensor, unit_actions: torch.Tensor) -> torch.Tensor:
        """``(2, b)``: both critics' values of the pairs."""
        x = critic_inputs(observations, unit_actions, len(self.weights[0]))
        last = len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.baddbmm(bias, x, weight)
            if index < last:
                x = torch.relu(x)
        return x.squeeze(2)

    def slots(self, critics: int | None = None, grads: bool = False) -> dict[str, torch.Tensor]:
        """The first ``critics`` critics' tensors (or their ``.grad``) by slot name, biases as
        ``(critics, out)`` views: what the stacked passes of :mod:`neuroplug.nets.gradients`
        read and write."""
        tensors = {}
        for layer, weight, bias in zip(self.layers, self.weights, self.biases, strict=True):
            if grads:
                for tensor in (weight, bias):
                    if tensor.grad is None:
                        tensor.grad = torch.empty_like(tensor)
                weight, bias = weight.grad, bias.grad
            tensors[layer.weight] = weight.detach()[:critics]
            tensors[layer.bias] = bias.detach()[:critics].squeeze(1)
        return tensors

    def regression_gradient(
        self, observations: torch.Tensor, unit_actions: torch.Tensor, targets: torch.Tensor
    ) -> float:
        """Write into every tensor's ``.grad`` the gradient of both critics' regression
        loss ``mean_b (Q1 - y)^2 + mean_b (Q2 - y)^2`` towards ``targets`` ``(b,)``; returns
        the loss. The backward pass is written out (:func:`neuroplug.nets.gradients.
        backward_stacked`, as PBT's members' and the DQN step's): at a 256-wide critic's
        sizes autograd's bookkeeping (recording the graph, walking it, accumulating each
        tensor's gradient) was a share of the step worth saving
        (``benchmarks/results/off_policy.md``), from the loss's gradient ``2 (Q - y) / b``."""
        tensors = self.slots()
        inputs = critic_inputs(observations, unit_actions, len(self.weights[0]))
        with torch.no_grad():
            values, kept = gradients.forward_stacked(self.layers, tensors, inputs)
            error = values - targets.view(1, -1, 1)  # (critics, b, 1)
            loss = error.square().mean(1).sum()
            grad = error * (2.0 / len(targets))
            gradients.backward_stacked(
                self.layers, tensors, kept, values, grad, self.slots(grads=True)
            )
        return float(loss)


def critic_inputs(
    observations: torch.Tensor, unit_actions: torch.Tensor, critics: int
) -> torch.Tensor:
    """``(critics, b, obs + A)``: each pair's input, the same for every critic."""
    x = torch.cat((observations.flatten(1).float(), unit_actions), dim=1)
    return x.unsqueeze(0).expand(critics, *x.shape)


def critic_action_gradients(
    critic: TwinCritic, observations: torch.Tensor, unit_actions: torch.Tensor, critics: int = 2
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``critics`` critics' values ``(critics, b)`` and their gradients with
    respect to the actions ``(critics, b, A)`` (an actor's loss reads them), by a
    written-out backward pass that computes no weight gradient: ``g <- 1;
    g <- (g * act'(output)) W^T`` layer by layer back to the action columns of the input."""
    tensors = critic.slots(critics)
    inputs = critic_inputs(observations, unit_actions, critics)
    with torch.no_grad():
        values, kept = gradients.forward_stacked(critic.layers, tensors, inputs)
        grad = torch.ones_like(values)
        for index in range(len(critic.layers) - 1, -1, -1):
            layer = critic.layers[index]
            output = values if index == len(critic.layers) - 1 else kept[index + 1]
            grad = gradients.ACTIVATION_GRADIENTS[layer.activation](grad, output)
            weight = tensors[layer.weight]
            if not index:  # the input's action columns only
                weight = weight[:, -unit_actions.shape[1] :]
            grad = torch.bmm(grad, weight.transpose(1, 2))
    return values.squeeze(2), grad


def critic_of_actions(
    critic: TwinCritic, observations: torch.Tensor, unit_actions: torch.Tensor, critics: int = 2
) -> torch.Tensor:
    """The first ``critics`` critics' values ``(critics, b)`` differentiable in the actions
    only (an actor's loss): the weights enter detached, so no gradient is computed for
    them, and TD3's actor (``critics=1``) runs only the critic it reads."""
    x = critic_inputs(observations, unit_actions, critics)
    last = len(critic.weights) - 1
    for index, (weight, bias) in enumerate(zip(critic.weights, critic.biases, strict=True)):
        x = torch.baddbmm(bias[:critics].detach(), x, weight[:critics].detach())
        if index < last:
            x = torch.relu(x)
    return x.squeeze(2)


def soft_update(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    """``target <- tau source + (1 - tau) target``, all tensors in one call, in place."""
    with torch.no_grad():
        torch._foreach_lerp_(list(target.parameters()), list(source.parameters()), tau)


def with_random_actions(
    actions: torch.Tensor, exploring: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """``actions`` with the rows of envs still ``exploring`` replaced by uniform actions in
    the box (before learning starts, as CleanRL samples the action space), as the pre-squash
    actions whose tanh they are; drawn only while some env explores."""
    if not bool(exploring.any()):
        return actions
    uniform = _uniform_pre_squash(actions.shape, generator, actions.device)
    return torch.where(exploring.unsqueeze(1), uniform, actions)


def _uniform_pre_squash(
    shape: tuple[int, ...], generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """Actions uniform in the box, as the pre-squash actions whose tanh they are."""
    unit = torch.rand(shape, generator=generator, device=device) * 2 - 1
    return torch.atanh(unit.clamp(-UNIT_EDGE, UNIT_EDGE))


def uniform_actions(
    count: int, width: int, generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """What :func:`with_random_actions` makes of a policy's ``(count, width)`` noisy
    actions when every env still explores, without the policy's forward (which is then
    thrown away: before learning starts most of a step's time). The policy's Gaussian noise
    is drawn all the same, so the generator's stream, and the run, are as with it."""
    torch.randn((count, width), generator=generator, device=device)
    return _uniform_pre_squash((count, width), generator, device)


def exploring_envs(members, envs_per_member: int, device) -> torch.Tensor:
    """Per env, whether its member still acts uniformly at random (its first
    ``learning_starts`` steps, as CleanRL samples the action space)."""
    flags = [member.env_steps < member.config.learning_starts for member in members]
    return torch.tensor(flags, device=device).repeat_interleave(envs_per_member)


def with_unit_actions(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A learner's minibatch with the critics' unit actions ``tanh(a)`` (the buffer keeps
    the actions before the squash)."""
    batch["unit_actions"] = torch.tanh(batch["actions"])
    return batch
