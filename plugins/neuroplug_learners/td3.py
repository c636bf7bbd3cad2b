"""``algo=td3``: twin delayed deep deterministic policy gradient, written once for K actors.

Fujimoto, van Hoof & Meger (2018), "Addressing Function Approximation Error in
Actor-Critic Methods", ICML, Algorithm 1; CleanRL's ``td3_continuous_action.py`` settings.
Per rollout of T steps of the envs (one gradient step per env step)::

    act:  a = clip(mu(s) + N(0, exploration_noise), -1, 1)     (uniform before learning_starts)
    store (s, a, r, terminated, s') in the replay buffer
    for each gradient step, on a minibatch B:
        a' = clip(mu'(s') + clip(N(0, policy_noise), -noise_clip, noise_clip), -1, 1)
        y  = r + discount min(Q1'(s', a'), Q2'(s', a'))      discount = gamma (1 - terminated)
        critics: minimise (Q1(s, a) - y)^2 + (Q2(s, a) - y)^2
        every policy_frequency steps, on the same B:
            actor: maximise Q1(s, mu(s))
            mu' <- tau mu + (1 - tau) mu';  Q' <- tau Q + (1 - tau) Q'   (targets move here only)

``discount`` is ``gamma^n`` with n-step returns (a replay buffer's ``discounts``, 0 where
the episode terminated). :class:`TD3Update` holds those steps for K actors stacked as rows
of a ``(K, D)`` matrix of flat policy parameters (their forward is the network's batched
``forward_members``, one Adam step moves all of them: Adam is element-wise), beside one pair
of twin critics (:class:`~neuroplug_learners.twin_critic.TwinCritic`, both in one stacked
product per layer). ``algo=td3`` is K = 1; ``cem_rl`` (half its population learns), ``erl``
(its learner) and ``pga_me`` (its greedy actor and its policy-gradient offspring) run K
actors, the critics' target policy each actor's target in turn; actor k > 0 takes its own
minibatch, actor 0 the critics' last.

``mu(s)`` is ``tanh`` of the policy network's outputs (what the run deploys: the
evaluation, replay and video run the same network); actions are in the unit box, scaled
into the env's by the envs.

The policy network is ``net``: on vector tasks a 256-256 ReLU MLP, CleanRL's actor
(``net.activation: null`` takes :attr:`~neuroplug_learners.td3_config.TD3Config.hidden_activation`).

Departures: ``algo=td3``'s gradient steps follow a rollout of T = 4 steps rather than each
single step (the same count, in phases).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import LearnerContext, Transitions
from neuroplug.envs.spec import EnvSpec
from neuroplug.nets import gradients
from neuroplug.nets.network import Network
from neuroplug.optim.adam import FusedAdam
from neuroplug.rl.acting import Acted, Acting
from neuroplug.rl.actor_critic import env_actions
from neuroplug.rl.replay import Replay, ReplayLearner
from neuroplug.runtime.devices import follow_the_load
from neuroplug.runtime.seeds import critic_generator, value_head_generator
from neuroplug_learners.td3_config import TD3Config
from neuroplug_learners.twin_critic import (
    UNIT_EDGE,
    TwinCritic,
    critic_action_gradients,
    critic_of_actions,
    exploring_envs,
    soft_update,
    uniform_actions,
    with_random_actions,
    with_unit_actions,
)


class TD3Update:
    """TD3's critic and actor steps for K actors stacked ``(K, D)`` (or one ``(D,)``), with
    one pair of twin critics, their target and optimiser; see the module docstring."""

    def __init__(
        self,
        network: Network,
        critic: TwinCritic,
        target_critic: TwinCritic,
        critic_optimizer: FusedAdam,
        tau: float,
        policy_noise: float,
        noise_clip: float,
        generator: torch.Generator,
    ) -> None:
        self.network = network
        self.critic, self.target_critic = critic, target_critic
        self.critic_optimizer = critic_optimizer
        self.tau, self.policy_noise, self.noise_clip = tau, policy_noise, noise_clip
        self.generator = generator
        self.written_out = gradients.written_out(network.layers)
        """Whether one actor's gradient (K = 1) is written out (an MLP policy: autograd's
        bookkeeping costs that step more than its products at 256-wide networks) rather
        than autograd's."""

    @classmethod
    def for_algorithm(cls, config: Any, context: Any) -> TD3Update:
        """The critics an algorithm's settings (a ``CooperationConfig``) ask for, on its
        network and env, drawing from the run's critic stream (``neuroplug.runtime.seeds.CRITIC``)."""
        generator = critic_generator(context.seed)
        inputs = math.prod(context.env.obs_shape) + context.env.num_actions
        critic = TwinCritic(inputs, config.critic_hidden, generator)
        target_critic = copy.deepcopy(critic).requires_grad_(False)
        optimizer = FusedAdam(critic.parameters(), config.critic_learning_rate)
        return cls(
            context.network,
            critic,
            target_critic,
            optimizer,
            config.tau,
            config.policy_noise,
            config.noise_clip,
            generator,
        )

    def mu(self, actors: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Unit actions ``(K, B, A)`` of actors ``(K, D)`` on their observations ``(K, B, *obs)``."""
        if len(actors) == 1:  # one actor: the network's own forward, not a batch of one
            return torch.tanh(self.network.forward_single(actors[0], observations[0])).unsqueeze(0)
        return torch.tanh(self.network.forward_members(actors, observations))

    def critic_step(self, batch: dict[str, torch.Tensor], target_actor: torch.Tensor) -> float:
        """One step of both critics towards ``r + discount min Q'(s', a')``, ``a'`` the
        smoothed action of ``target_actor`` ``(D,)``; returns the loss. The targets stay."""
        with torch.no_grad():
            following = self.mu(
                target_actor.unsqueeze(0), batch["next_observations"].float().unsqueeze(0)
            )[0]
            smoothing = torch.randn(
                following.shape, generator=self.generator, device=following.device
            )
            smoothing = (smoothing * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
            following = (following + smoothing).clamp(-1, 1)
            future = self.target_critic(batch["next_observations"], following).min(dim=0).values
            targets = batch["rewards"] + batch["discounts"] * future
        loss = self.critic.regression_gradient(
            batch["observations"], batch["unit_actions"], targets
        )
        self.critic_optimizer.step()
        return loss

    def actor_step(
        self, actors: torch.Tensor, optimizer: FusedAdam, observations: torch.Tensor
    ) -> float:
        """One deterministic policy gradient step of every actor (a ``(K, D)`` or ``(D,)``
        parameter) on its own minibatch ``(K, B, *obs)``: maximise ``Q1(s, mu_k(s))``.
        Returns the mean loss. The targets stay (:meth:`update_targets`)."""
        stacked = actors if actors.dim() == 2 else actors.unsqueeze(0)
        if len(stacked) == 1 and self.written_out:
            loss = self._written_out_actor_gradient(actors, observations[0])
        else:
            actions = self.mu(stacked, observations)
            flat = observations.flatten(0, 1)
            values = critic_of_actions(self.critic, flat, actions.flatten(0, 1), critics=1)[0]
            # Summed over actors: each actor's gradient is its own loss's (rows apart).
            total = -values.reshape(len(stacked), -1).mean(1).sum()
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            loss = float(total.detach()) / len(stacked)
        optimizer.step()
        return loss

    def update_targets(
        self, actors: torch.Tensor, targets: torch.Tensor, critics: bool = True
    ) -> None:
        """``mu' <- tau mu + (1 - tau) mu'`` for every actor and, with ``critics``, the
        critics' target likewise: TD3's delayed target updates, after an actor step."""
        with torch.no_grad():
            targets.lerp_(actors.detach(), self.tau)
        if critics:
            soft_update(self.target_critic, self.critic, self.tau)

    def _written_out_actor_gradient(self, actor: torch.Tensor, observations: torch.Tensor) -> float:
        """The actor loss ``-mean_b Q1(s, tanh(net(s)))`` of one actor (``(D,)`` or
        ``(1, D)``) and its gradient written into its ``.grad`` without autograd (an MLP policy's layer table): the critic's
        action gradient, through the ``tanh``, then the policy's layers backwards
        (:mod:`neuroplug.nets.gradients`). The autograd path of :meth:`actor_step` is the
        definition it is tested against."""
        network = self.network
        tensors = network.layout.split(actor.detach().view(-1))
        with torch.no_grad():
            outputs, kept = gradients.forward(network.layers, network.layout, tensors, observations)
            actions = torch.tanh(outputs)
            values, action_grads = critic_action_gradients(
                self.critic, observations, actions, critics=1
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
                network.layout.split(actor.grad.view(-1)),
            )
        return -float(values.mean())

    def train(
        self,
        actors: StackedActors,
        replay: Replay,
        actor_steps: int,
        critic_steps: int,
    ) -> dict[str, float]:
        """An algorithm's block of steps: ``actor_steps`` stacked steps of ``actors`` with
        ``critic_steps`` critic steps spread evenly before them, the critics' target policy
        each actor's target in turn (as CEM-RL trains the critics with each learner); actor
        0 steps on the critics' last minibatch, the others on their own. Each actor step
        moves the actors' targets, and the critics' where critics train. Minibatches come
        from ``replay`` (whose buffer holds the actions in the unit box). Returns the mean
        losses."""
        count = len(actors)
        critic_losses, actor_losses = [], []
        critic_done = 0
        last: dict[str, torch.Tensor] | None = None
        # Called from an algorithm's tell or ask, whose math runs at a fixed thread count:
        # the gradient steps, the same bits at any count, follow the load as a learner's do.
        with follow_the_load() as recheck:
            for step in range(max(actor_steps, 1 if critic_steps else 0)):
                recheck()
                due = critic_steps if not actor_steps else (step + 1) * critic_steps // actor_steps
                while critic_done < due:
                    last = {name: value[0] for name, value in self._minibatches(replay, 1).items()}
                    critic_losses.append(
                        self.critic_step(last, actors.targets[critic_done % count])
                    )
                    critic_done += 1
                if step < actor_steps:
                    observations = self._actor_observations(replay, last, count)
                    actor_losses.append(
                        self.actor_step(actors.params, actors.optimizer, observations)
                    )
                    self.update_targets(actors.params, actors.targets, critics=critic_steps > 0)
        return {
            "critic_loss": sum(critic_losses) / max(1, len(critic_losses)),
            "actor_loss": sum(actor_losses) / max(1, len(actor_losses)),
            "actor_steps": float(len(actor_losses)),
            "critic_steps": float(critic_done),
        }

    def _minibatches(self, replay: Replay, count: int) -> dict[str, torch.Tensor]:
        """``count`` minibatches of ``replay`` stacked ``(count, B, ...)``, the stored
        unit-box actions as ``unit_actions``."""
        batch = replay.sample(self.critic.weights[0].device, count)
        batch["unit_actions"] = batch.pop("actions")
        return {name: value.unflatten(0, (count, -1)) for name, value in batch.items()}

    def _actor_observations(
        self, replay: Replay, last: dict[str, torch.Tensor] | None, count: int
    ) -> torch.Tensor:
        """``(K, B, *obs)``: actor 0's the critics' last minibatch (Algorithm 1's), the
        others' drawn afresh (all of them where no critic has stepped)."""
        if last is None:
            return self._minibatches(replay, count)["observations"]
        observations = last["observations"].unsqueeze(0)
        if count > 1:
            fresh = self._minibatches(replay, count - 1)["observations"]
            observations = torch.cat((observations, fresh))
        return observations

    def state_dict(self) -> dict[str, Any]:
        """The critics, their targets, the optimiser and the target smoothing noise's stream."""
        return {
            "critic": self.critic.state_dict(),
            "target_critic": self.target_critic.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.critic.load_state_dict(state["critic"])
        self.target_critic.load_state_dict(state["target_critic"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.generator.set_state(state["generator"])


def evaluated_replay(config: Any, context: Any) -> Replay:
    """The replay loop of an algorithm whose critics learn from what its evaluations played
    (``cem_rl``, ``erl``, ``pga_me``): its settings' buffer size, learning start, minibatch
    and gamma, the buffer fed whole transitions (:func:`store_evaluated`)."""
    return Replay.for_run(
        context.env,
        config.buffer_size,
        config.learning_starts,
        config.batch_size,
        context.seed,
        gamma=config.gamma,
        from_evaluations=True,
    )


def store_evaluated(replay: Replay, transitions: Transitions, env: EnvSpec) -> None:
    """Store an evaluation's steps, each action in the unit box ``[-1, 1]`` as the critics
    read it (the policy's ``tanh`` output, before the env's scaling)."""
    low, high = env.action_low, env.action_high
    unit = (2.0 * (transitions.actions - low) / (high - low) - 1.0).astype(np.float32)
    replay.buffer.add_transitions(
        transitions.observations,
        unit,
        transitions.rewards,
        transitions.next_observations,
        transitions.terminated,
    )


class StackedActors:
    """K actors' flat parameters ``(K, D)``, their target copies and their Adam."""

    def __init__(self, start: torch.Tensor, learning_rate: float) -> None:
        self.params = torch.nn.Parameter(start.detach().float().clone())
        self.targets = start.detach().float().clone()
        self.optimizer = FusedAdam([self.params], learning_rate)

    def __len__(self) -> int:
        return len(self.params)

    def state_dict(self) -> dict[str, Any]:
        """The parameters, targets and optimiser, for checkpoints."""
        return {
            "params": self.params.detach().clone(),
            "targets": self.targets.clone(),
            "optimizer": self.optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        with torch.no_grad():
            self.params.copy_(state["params"])
        self.targets.copy_(state["targets"])
        self.optimizer.load_state_dict(state["optimizer"])


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
        exploring = self.random[rows]
        if bool(exploring.all()):
            count, width = len(observations), self.env.num_actions
            actions = uniform_actions(count, width, generator, self.device)
        else:
            members = self.member_slice(rows)
            inputs = self.by_member(observations.float(), members)
            means = self.network.forward_members(self.actors[members], inputs)
            unit = torch.tanh(means.reshape(len(observations), -1))
            noise = torch.randn(unit.shape, generator=generator, device=self.device)
            unit = (unit + self.noise[rows].unsqueeze(1) * noise).clamp(-UNIT_EDGE, UNIT_EDGE)
            actions = with_random_actions(torch.atanh(unit), exploring, generator)
        zeros = torch.zeros(len(actions), device=self.device)
        return Acted(actions, zeros, zeros, env_actions(self.env, actions))


class TD3(ReplayLearner):
    """TD3 on the policy network from a replay buffer of the run's transitions."""

    config_class = TD3Config
    losses = ("critic_loss", "actor_loss")

    def __init__(self, config: TD3Config, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.target = copy.deepcopy(self.model).requires_grad_(False)
        # Fused: one kernel per step for all tensors (neuroplug.optim.adam.FusedAdam says why).
        self.actor_optimizer = FusedAdam([self.model.actor], config.learning_rate)
        self.critic_optimizer = FusedAdam(self.model.critic.parameters(), config.learning_rate)
        self.update = TD3Update(
            context.network,
            self.model.critic,
            self.target.critic,
            self.critic_optimizer,
            config.tau,
            config.policy_noise,
            config.noise_clip,
            self.generator,
        )
        """TD3's steps, for this learner's one actor (K = 1)."""

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
        """One step of Algorithm 1 on ``batch``: the critics, and every
        ``policy_frequency`` steps the actor on the same batch and the targets."""
        update, model = self.update, self.model
        batch = with_unit_actions(batch)
        self._losses["critic_loss"].append(update.critic_step(batch, self.target.actor))
        self.updates += 1
        if self.updates % self.config.policy_frequency:
            return
        observations = batch["observations"].unsqueeze(0)
        self._losses["actor_loss"].append(
            update.actor_step(model.actor, self.actor_optimizer, observations)
        )
        update.update_targets(model.actor, self.target.actor)

    def _method_state(self) -> dict[str, torch.Tensor]:
        return self.target.state_dict()

    def _load_method_state(self, state: dict[str, torch.Tensor]) -> None:
        self.target.load_state_dict(state)
