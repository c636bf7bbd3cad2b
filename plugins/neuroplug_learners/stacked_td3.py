"""TD3's steps for several actors at once, from one replay buffer: what ``cem_rl`` (half
its population learns) and ``erl`` (its learner) share.

The actors are rows of a ``(K, D)`` matrix of flat policy parameters, the layout every
population has, so their forward is the network's batched ``forward_members`` and one
Adam step moves all of them (Adam is element-wise: K actors in one tensor are K
independent optimisers). The twin critics are :class:`~neuroplug_learners.off_policy.
TwinCritic`, both in one stacked product per layer. An actor's unit action is ``tanh`` of
the network's outputs: what the population's policy sends the envs, scaled to the box.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from neuroplug.adam import FusedAdam
from neuroplug.devices import follow_the_load
from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.network import Network
from neuroplug.seeds import critic_generator
from neuroplug_learners.off_policy import TwinCritic, critic_of_actions, soft_update
from neuroplug_learners.transition_buffer import TransitionBuffer


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


class StackedTD3:
    """Twin critics, their targets and optimiser, and TD3's updates of stacked actors."""

    def __init__(
        self,
        network: Network,
        env: EnvSpec,
        critic_hidden: list[int],
        critic_learning_rate: float,
        gamma: float,
        tau: float,
        policy_noise: float,
        noise_clip: float,
        generator: torch.Generator,
    ) -> None:
        self.network = network
        self.gamma, self.tau = gamma, tau
        self.policy_noise, self.noise_clip = policy_noise, noise_clip
        self.generator = generator
        inputs = math.prod(env.obs_shape) + env.num_actions
        self.critic = TwinCritic(inputs, critic_hidden, generator)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.critic_optimizer = FusedAdam(self.critic.parameters(), critic_learning_rate)

    @classmethod
    def for_algorithm(cls, config: Any, context: Any) -> StackedTD3:
        """The critics an algorithm's settings (a ``CooperationConfig``) ask for, on its
        network and env, drawing from the run's critic stream (``neuroplug.seeds.CRITIC``)."""
        return cls(
            context.network,
            context.env,
            config.critic_hidden,
            config.critic_learning_rate,
            config.gamma,
            config.tau,
            config.policy_noise,
            config.noise_clip,
            critic_generator(context.seed),
        )

    def mu(self, actors: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Unit actions ``(K, B, A)`` of actors ``(K, D)`` on their observations ``(K, B, *obs)``."""
        return torch.tanh(self.network.forward_members(actors, observations))

    def critic_step(self, batch: dict[str, torch.Tensor], target_actor: torch.Tensor) -> float:
        """One step of both critics towards ``r + gamma (1 - terminated) min Q'(s', a')``, with
        ``a'`` the smoothed action of ``target_actor`` ``(D,)``; returns the loss."""
        with torch.no_grad():
            following = self.mu(target_actor.unsqueeze(0), batch["next_observations"].unsqueeze(0))[
                0
            ]
            smoothing = torch.randn(following.shape, generator=self.generator)
            smoothing = (smoothing * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
            following = (following + smoothing).clamp(-1, 1)
            future = self.target_critic(batch["next_observations"], following).min(dim=0).values
            continues = 1.0 - batch["terminated"].float()
            targets = batch["rewards"] + self.gamma * continues * future
        loss = self.critic.regression_gradient(
            batch["observations"], batch["unit_actions"], targets
        )
        self.critic_optimizer.step()
        soft_update(self.target_critic, self.critic, self.tau)
        return loss

    def actor_step(
        self,
        actors: torch.nn.Parameter,
        targets: torch.Tensor,
        optimizer: FusedAdam,
        batch: dict[str, torch.Tensor],
    ) -> float:
        """One deterministic policy gradient step of every actor ``(K, D)`` on its own
        minibatch ``(K, B, ...)``: maximise ``Q1(s, mu_k(s))``; their targets follow. Returns
        the mean loss."""
        observations = batch["observations"]
        actions = self.mu(actors, observations)
        flat = observations.flatten(0, 1)
        values = critic_of_actions(self.critic, flat, actions.flatten(0, 1), critics=1)[0]
        # Summed over actors: each actor's gradient is its own loss's (their rows are apart).
        loss = -values.reshape(len(actors), -1).mean(1).sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            targets.lerp_(actors, self.tau)
        return float(loss.detach()) / len(actors)

    def train(
        self,
        actors: StackedActors,
        buffer: TransitionBuffer,
        actor_steps: int,
        critic_steps: int,
        batch_size: int,
    ) -> dict[str, float]:
        """``actor_steps`` stacked steps of ``actors`` with ``critic_steps`` critic steps
        spread evenly between them, the critics' target policy the actor whose turn it is
        (each in turn, as CEM-RL trains the critics with each learner). Returns the mean
        losses."""
        count = len(actors.params)
        critic_losses, actor_losses = [], []
        critic_done = 0
        # Called from an algorithm's tell or ask, whose math runs at a fixed thread count:
        # the gradient steps, the same bits at any count, follow the load as a learner's do.
        with follow_the_load() as recheck:
            for step in range(max(actor_steps, 1 if critic_steps else 0)):
                recheck()
                due = critic_steps if not actor_steps else (step + 1) * critic_steps // actor_steps
                while critic_done < due:
                    batch = buffer.sample((batch_size,), self.generator)
                    target = actors.targets[critic_done % count]
                    critic_losses.append(self.critic_step(batch, target))
                    critic_done += 1
                if step < actor_steps:
                    batch = buffer.sample((count, batch_size), self.generator)
                    actor_losses.append(
                        self.actor_step(actors.params, actors.targets, actors.optimizer, batch)
                    )
        return {
            "critic_loss": sum(critic_losses) / max(1, len(critic_losses)),
            "actor_loss": sum(actor_losses) / max(1, len(actor_losses)),
            "actor_steps": float(len(actor_losses)),
            "critic_steps": float(critic_done),
        }

    def state_dict(self) -> dict[str, Any]:
        """The critics, their targets, the optimiser and the sampling stream."""
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
