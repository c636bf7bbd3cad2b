"""``algo=td3``: twin delayed deep deterministic policy gradient.

Fujimoto, van Hoof & Meger (2018), "Addressing Function Approximation Error in
Actor-Critic Methods", ICML, Algorithm 1; CleanRL's ``td3_continuous_action.py`` settings.
Per rollout of T steps of the envs (one gradient step per env step)::

    act:  a = clip(mu(s) + N(0, exploration_noise), -1, 1)     (uniform before learning_starts)
    store (s, a, r, terminated, s') in the replay buffer
    for each gradient step:
        a' = clip(mu'(s') + clip(N(0, policy_noise), -noise_clip, noise_clip), -1, 1)
        y  = r + gamma (1 - terminated) min(Q1'(s', a'), Q2'(s', a'))
        critics: minimise (Q1(s, a) - y)^2 + (Q2(s, a) - y)^2
        every policy_frequency steps:
            actor: maximise Q1(s, mu(s));  mu' <- tau mu + (1 - tau) mu';  Q' likewise

``mu(s)`` is ``tanh`` of the policy network's outputs (what the run deploys: the
evaluation, replay and video run the same network); actions are in the unit box, scaled
into the env's by the envs. The twin critics run as one stacked computation
(:class:`~neuroplug_learners.off_policy.TwinCritic`).

The policy network is ``net``: on vector tasks a 256-256 ReLU MLP, CleanRL's actor
(``net.activation: null`` takes :attr:`~neuroplug_learners.td3_config.TD3Config.hidden_activation`).

Departures: gradient steps follow a rollout of T = 4 steps rather than each single step
(the same count, in phases).
"""

from __future__ import annotations

import copy
import math

import torch

from neuroplug.adam import FusedAdam
from neuroplug.api import LearnerContext
from neuroplug.nets import gradients
from neuroplug.rl.acting import Acted, Acting
from neuroplug.rl.actor_critic import env_actions
from neuroplug.seeds import value_head_generator
from neuroplug_learners.off_policy import (
    UNIT_EDGE,
    OffPolicyLearner,
    TwinCritic,
    critic_action_gradients,
    critic_of_actions,
    exploring_envs,
    soft_update,
    with_random_actions,
)
from neuroplug_learners.td3_config import TD3Config


class DeterministicActorCritic(torch.nn.Module):
    """The actor (the policy network's flat parameters, what the run deploys) and the twin
    critics."""

    def __init__(self, context: LearnerContext, critic_hidden: list[int]) -> None:
        super().__init__()
        self.network = context.network
        self.actor = torch.nn.Parameter(context.initial_params.detach().float().clone())
        inputs = math.prod(context.env.obs_shape) + context.env.num_actions
        self.critic = TwinCritic(inputs, critic_hidden, value_head_generator(context.seed))

    def policy_vector(self) -> torch.Tensor:
        return self.actor

    def mu(self, observations: torch.Tensor, actor: torch.Tensor | None = None) -> torch.Tensor:
        """The deterministic unit action ``tanh(network(s))``."""
        params = self.actor if actor is None else actor
        return torch.tanh(self.network.forward_single(params, observations.float()))


class NoisyDeterministicActing(Acting):
    """Every member's mu(s) in one forward, plus its Gaussian exploration noise on the
    squashed action (CleanRL's); uniform actions before a member's learning starts."""

    def refresh(self) -> None:
        members = self.members
        self.network = members[0].model.network
        self.env = members[0].context.env
        self.actors = torch.stack([member.model.actor.detach() for member in members])
        noise = [member.config.exploration_noise for member in members]
        self.noise = torch.tensor(noise, device=self.device).repeat_interleave(self.envs_per_member)
        self.random = exploring_envs(members, self.envs_per_member, self.device)

    @torch.no_grad()
    def act(self, observations, rows, states, generator):
        members = self.member_slice(rows)
        inputs = self.by_member(observations.float(), members)
        means = self.network.forward_members(self.actors[members], inputs)
        unit = torch.tanh(means.reshape(len(observations), -1))
        noise = torch.randn(unit.shape, generator=generator, device=self.device)
        unit = (unit + self.noise[rows].unsqueeze(1) * noise).clamp(-UNIT_EDGE, UNIT_EDGE)
        actions = with_random_actions(torch.atanh(unit), self.random[rows], generator)
        zeros = torch.zeros(len(actions), device=self.device)
        return Acted(actions, zeros, zeros, env_actions(self.env, actions))


class TD3(OffPolicyLearner):
    """TD3 on the policy network from a replay buffer of the run's transitions."""

    config_class = TD3Config
    losses = ("critic_loss", "actor_loss")

    def __init__(self, config: TD3Config, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.target = copy.deepcopy(self.model).requires_grad_(False)
        # Fused: one kernel per step for all tensors (DQN measured about half the time).
        self.actor_optimizer = FusedAdam([self.model.actor], config.learning_rate)
        self.critic_optimizer = FusedAdam(self.model.critic.parameters(), config.learning_rate)
        self._written_out = gradients.written_out(context.network.layers)
        """Whether the actor's gradient is written out (an MLP policy) or autograd's."""

    def build_model(self) -> DeterministicActorCritic:
        return DeterministicActorCritic(self.context, self.config.critic_hidden)

    @classmethod
    def population_acting(cls, members, envs_per_member: int) -> Acting:
        return NoisyDeterministicActing(members, envs_per_member)

    def optimizers(self) -> dict[str, FusedAdam]:
        return {"actor": self.actor_optimizer, "critic": self.critic_optimizer}

    def learning_rates(self) -> dict[str, float]:
        return dict.fromkeys(("actor", "critic"), self.config.learning_rate)

    def _gradient_step(self, batch: dict[str, torch.Tensor]) -> None:
        config, model, target = self.config, self.model, self.target
        with torch.no_grad():
            smoothing = torch.randn(
                batch["unit_actions"].shape, generator=self.generator, device=self.device
            )
            smoothing = (smoothing * config.policy_noise).clamp(
                -config.noise_clip, config.noise_clip
            )
            following = (target.mu(batch["next_observations"]) + smoothing).clamp(-1, 1)
            future = target.critic(batch["next_observations"], following).min(dim=0).values
            targets = batch["rewards"] + batch["discounts"] * future
        self._critic_step(batch, targets)
        if self.updates % config.policy_frequency:
            return
        if self._written_out:
            actor_loss = self._written_out_actor_gradient(batch["observations"])
        else:
            actions = model.mu(batch["observations"])
            loss = -critic_of_actions(model.critic, batch["observations"], actions, 1)[0].mean()
            self.actor_optimizer.zero_grad(set_to_none=True)
            loss.backward()
            actor_loss = float(loss.detach())
        self.actor_optimizer.step()
        self._losses["actor_loss"].append(actor_loss)
        soft_update(target, model, config.tau)

    def _written_out_actor_gradient(self, observations: torch.Tensor) -> float:
        """The actor loss ``-mean_b Q1(s, tanh(net(s)))`` and its gradient written into the
        actor's ``.grad`` without autograd (an MLP policy's layer table): the critic's
        action gradient, through the ``tanh``, then the policy's layers backwards
        (:mod:`neuroplug.nets.gradients`). Autograd's bookkeeping was half of this step at
        256-wide networks (1 thread, AMX Xeon: 1.9 ms of backward for about 1 ms of
        products)."""
        network, actor = self.context.network, self.model.actor
        tensors = network.layout.split(actor.detach())
        with torch.no_grad():
            outputs, kept = gradients.forward(network.layers, network.layout, tensors, observations)
            actions = torch.tanh(outputs)
            values, action_grads = critic_action_gradients(
                self.model.critic, observations, actions, critics=1
            )
            values, action_grad = values[0], action_grads[0]
            # d(-mean Q)/d(outputs): through tanh' = 1 - tanh^2.
            grad_outputs = action_grad * (actions.square() - 1) / len(values)
            if actor.grad is None:
                actor.grad = torch.zeros_like(actor)
            gradients.backward(
                network.layers,
                network.layout,
                tensors,
                kept,
                outputs,
                grad_outputs,
                network.layout.split(actor.grad),
            )
        return -float(values.mean())

    def _targets_state(self) -> dict[str, torch.Tensor]:
        return self.target.state_dict()

    def _load_targets(self, state: dict[str, torch.Tensor]) -> None:
        self.target.load_state_dict(state)
