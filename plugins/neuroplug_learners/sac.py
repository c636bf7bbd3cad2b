"""``algo=sac``: soft actor-critic with automatic entropy tuning.

Haarnoja, Zhou, Abbeel & Levine (2018), "Soft Actor-Critic: Off-Policy Maximum Entropy
Deep Reinforcement Learning with a Stochastic Actor", ICML; the learned temperature of
Haarnoja et al. (2018b), "Soft Actor-Critic Algorithms and Applications"; CleanRL's
``sac_continuous_action.py`` settings. Per rollout of T steps of the envs (one gradient step
per env step)::

    act:  u ~ N(mean(s), std(s)),  a = tanh(u)                 (uniform before learning_starts)
    store (s, u, r, terminated, s') in the replay buffer
    for each gradient step:
        a', log pi(a'|s') from the actor at s'
        y = r + gamma (1 - terminated) (min(Q1'(s', a'), Q2'(s', a')) - alpha log pi(a'|s'))
        critics: minimise (Q1(s, a) - y)^2 + (Q2(s, a) - y)^2
        every policy_frequency steps, policy_frequency times:
            actor: minimise alpha log pi(a|s) - min(Q1, Q2)(s, a),  a ~ pi(.|s) reparameterised
            alpha: minimise -alpha (log pi(a|s) + target_entropy),  target_entropy = -|A|
        every target_network_frequency steps: Q' <- tau Q + (1 - tau) Q'

    log pi(a|s) = log N(u; mean, std) - sum log(1 - tanh(u)^2 + 1e-6)

The mean is the policy network's outputs (what the run deploys: the evaluation, replay and
video act on ``tanh(mean)``); the log-std a linear head on the same network's last hidden
features, as CleanRL's ``fc_logstd`` (``algo.log_std_from=trunk``), or a second network of
the policy's shape (``network``: a whole-policy module, which has no features), squashed by ``tanh`` into [log_std_min, log_std_max].
The twin critics run as one stacked computation.

Departures: gradient steps follow a rollout of T = 4 steps (ReLU as CleanRL's unless
``net.activation`` says otherwise).
"""

from __future__ import annotations

import copy
import math

import torch

from neuroplug.api import LearnerContext
from neuroplug.errors import ConfigError
from neuroplug.nets import gradients
from neuroplug.nets.network import Network
from neuroplug.optim.adam import FusedAdam
from neuroplug.rl.acting import Acted, Acting
from neuroplug.rl.actor_critic import env_actions
from neuroplug.rl.replay import ReplayLearner
from neuroplug.runtime.seeds import log_std_generator, value_head_generator
from neuroplug_learners.sac_config import SACConfig
from neuroplug_learners.twin_critic import (
    TwinCritic,
    critic_action_gradients,
    critic_of_actions,
    exploring_envs,
    soft_update,
    uniform_actions,
    with_random_actions,
    with_unit_actions,
)

HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)


class SquashedGaussianActorCritic(torch.nn.Module):
    """The actor's mean (the policy network's flat parameters, deployed) and log-std (a
    linear head on its last hidden features, or a second network of its shape: see
    :attr:`trunk_head`), the twin critics and the temperature."""

    def __init__(self, context: LearnerContext, config: SACConfig) -> None:
        super().__init__()
        network, actions = context.network, context.env.num_actions
        self.network = network
        self.actor = torch.nn.Parameter(context.initial_params.detach().float().clone())
        self.trunk_head = config.log_std_from == "trunk"
        """Whether the log-std is a linear head ``(|A|, F)`` on the actor's last hidden
        features (CleanRL's ``fc_logstd``); otherwise ``log_std_network`` computes it."""
        generator = log_std_generator(context.seed)
        self.log_std_network: Network | None = None
        if self.trunk_head:
            require_features(network)
            log_std = linear_head_init(network.feature_size, actions, generator)
        else:
            self.log_std_network = network.resized(actions)
            log_std = self.log_std_network.initial_params(generator)
        self.log_std = torch.nn.Parameter(log_std.float())
        inputs = math.prod(context.env.obs_shape) + actions
        self.critic = TwinCritic(inputs, config.critic_hidden, value_head_generator(context.seed))
        start = config.alpha_init if config.autotune else config.alpha
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(start)))
        self.bounds = (config.log_std_min, config.log_std_max)

    def policy_vector(self) -> torch.Tensor:
        return self.actor

    def distribution(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The pre-squash Gaussian's mean and log-std at ``observations``."""
        observations = observations.float()
        if self.trunk_head:
            features = self.network.features(self.actor, observations)
            mean = self.network.head(self.actor, features)
            weight, bias = head_tensors(self.log_std, mean.shape[-1])
            raw = torch.nn.functional.linear(features, weight, bias)
        else:
            mean = self.network.forward_single(self.actor, observations)
            raw = self.log_std_network.forward_single(self.log_std, observations)
        return mean, squash_log_std(raw, *self.bounds)

    def sample(self, observations: torch.Tensor, generator: torch.Generator):
        """A reparameterised unit action ``tanh(u)`` and its log-likelihood."""
        mean, log_std = self.distribution(observations)
        noise = torch.randn(mean.shape, generator=generator, device=mean.device)
        u = mean + log_std.exp() * noise
        return torch.tanh(u), squashed_log_prob(u, noise, log_std)


def require_features(network: Network) -> None:
    """Refuse ``algo.log_std_from=trunk`` on a network with no last hidden features (a
    whole-policy module) before anything is trained."""
    if not (network.layers or network.critic_shares_trunk):
        raise ConfigError(
            "algo.log_std_from",
            f"trunk needs the actor's last hidden features, and {network.describe()} is a "
            "whole policy with none",
            "network (a second network of the policy's shape), or net.features=<width> "
            "for a module with an encoder",
        )


def linear_head_init(features: int, outputs: int, generator: torch.Generator) -> torch.Tensor:
    """A flat ``(outputs * features + outputs,)`` linear head, weight then bias, drawn as
    ``torch.nn.Linear``'s default (CleanRL's ``fc_logstd``): ``U(-1/sqrt(F), 1/sqrt(F))``."""
    bound = 1.0 / math.sqrt(features)
    flat = torch.rand(outputs * (features + 1), generator=generator)
    return (2 * flat - 1) * bound


def head_tensors(flat: torch.Tensor, outputs: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The weight ``(..., outputs, F)`` and bias ``(..., outputs)`` views of flat heads
    ``(..., outputs * F + outputs)`` (:func:`linear_head_init`'s order)."""
    weights = flat[..., :-outputs]
    return weights.unflatten(-1, (outputs, -1)), flat[..., -outputs:]


def squash_log_std(raw: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """CleanRL's bounded log-std: ``low + (high - low) (tanh(raw) + 1) / 2``."""
    return low + 0.5 * (high - low) * (torch.tanh(raw) + 1)


def squashed_log_prob(u: torch.Tensor, noise: torch.Tensor, log_std: torch.Tensor):
    """``log N(u; mean, std) - sum log(1 - tanh(u)^2 + 1e-6)`` per row, ``noise`` being
    ``(u - mean) / std``."""
    gaussian = -0.5 * noise.pow(2) - log_std - HALF_LOG_TWO_PI
    return (gaussian - torch.log(1 - torch.tanh(u).pow(2) + 1e-6)).sum(dim=1)


class SquashedGaussianActing(Acting):
    """Every member's Gaussian in one forward of its network (and its log-std head or
    network); uniform actions before a member's learning starts."""

    def refresh(self) -> None:
        members = self.members
        first = members[0].model
        self.network, self.log_std_network = first.network, first.log_std_network
        self.bounds = first.bounds
        self.env = members[0].context.env
        self.means = torch.stack([member.model.actor.detach() for member in members])
        self.log_stds = torch.stack([member.model.log_std.detach() for member in members])
        self.random = exploring_envs(members, self.envs_per_member, self.device)

    @torch.no_grad()
    def act(self, observations, rows, states, generator):
        count, exploring = len(observations), self.random[rows]
        if bool(exploring.all()):
            actions = uniform_actions(count, self.env.num_actions, generator, self.device)
            zeros = torch.zeros(count, device=self.device)
            return Acted(actions, zeros, zeros, env_actions(self.env, actions))
        members = self.member_slice(rows)
        inputs = self.by_member(observations.float(), members)
        means = self.means[members]
        if self.log_std_network is None:  # a head on the trunk
            features, _ = self.network.features_members_with_state(means, inputs, None)
            mean = self.network.head_members(means, features)
            weight, bias = head_tensors(self.log_stds[members], mean.shape[-1])
            raw = torch.baddbmm(bias.unsqueeze(1), features, weight.transpose(1, 2))
        else:
            mean = self.network.forward_members(means, inputs)
            raw = self.log_std_network.forward_members(self.log_stds[members], inputs)
        mean = mean.reshape(count, -1)
        log_std = squash_log_std(raw.reshape(count, -1), *self.bounds)
        noise = torch.randn(mean.shape, generator=generator, device=self.device)
        actions = with_random_actions(mean + log_std.exp() * noise, exploring, generator)
        zeros = torch.zeros(count, device=self.device)
        return Acted(actions, zeros, zeros, env_actions(self.env, actions))


class SAC(ReplayLearner):
    """SAC on the policy network from a replay buffer of the run's transitions."""

    config_class = SACConfig
    losses = ("critic_loss", "actor_loss", "alpha", "entropy")

    def __init__(self, config: SACConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        model = self.model
        self.target_critic = copy.deepcopy(model.critic).requires_grad_(False)
        # Fused: one kernel per step for all tensors (neuroplug.optim.adam.FusedAdam says why).
        self.actor_optimizer = FusedAdam([model.actor, model.log_std], config.policy_lr)
        self.critic_optimizer = FusedAdam(model.critic.parameters(), config.q_lr)
        self.alpha_optimizer = FusedAdam([model.log_alpha], config.q_lr)
        self.target_entropy = -float(context.env.num_actions)
        self._written_out = gradients.written_out(model.network.layers) and (
            model.trunk_head or gradients.written_out(model.log_std_network.layers)
        )
        """Whether the actor's gradient is written out (MLP networks) or autograd's."""

    def build_model(self) -> SquashedGaussianActorCritic:
        return SquashedGaussianActorCritic(self.context, self.config)

    @classmethod
    def population_acting(cls, members, envs_per_member: int) -> Acting:
        return SquashedGaussianActing(members, envs_per_member)

    def optimizers(self) -> dict[str, FusedAdam]:
        return {
            "actor": self.actor_optimizer,
            "critic": self.critic_optimizer,
            "alpha": self.alpha_optimizer,
        }

    def learning_rates(self) -> dict[str, float]:
        config = self.config
        return {"actor": config.policy_lr, "critic": config.q_lr, "alpha": config.q_lr}

    @property
    def alpha(self) -> float:
        if not self.config.autotune:
            return self.config.alpha
        return float(self.model.log_alpha.detach().exp())

    def _gradient_step(self, batch: dict[str, torch.Tensor]) -> None:
        config, model = self.config, self.model
        batch = with_unit_actions(batch)
        alpha = self.alpha
        with torch.no_grad():
            following, log_prob = model.sample(batch["next_observations"], self.generator)
            future = self.target_critic(batch["next_observations"], following).min(dim=0).values
            targets = batch["rewards"] + batch["discounts"] * (future - alpha * log_prob)
        self._critic_step(batch, targets)
        if self.updates % config.policy_frequency == 0:
            for _ in range(config.policy_frequency):  # CleanRL: the delay made up at once
                self._actor_step(batch["observations"])
        if self.updates % config.target_network_frequency == 0:
            soft_update(self.target_critic, model.critic, config.tau)

    def _critic_step(self, batch: dict[str, torch.Tensor], targets: torch.Tensor) -> None:
        """Both critics towards ``targets``: minimise (Q1(s, a) - y)^2 + (Q2(s, a) - y)^2;
        counts the update."""
        critic = self.model.critic
        loss = critic.regression_gradient(batch["observations"], batch["unit_actions"], targets)
        self.critic_optimizer.step()
        self._losses["critic_loss"].append(loss)
        self.updates += 1

    def _actor_step(self, observations: torch.Tensor) -> None:
        model = self.model
        if self._written_out:
            actor_loss, log_prob = self._written_out_actor_gradient(observations)
        else:
            actions, log_prob = model.sample(observations, self.generator)
            value = critic_of_actions(model.critic, observations, actions).min(dim=0).values
            loss = (self.alpha * log_prob - value).mean()
            self.actor_optimizer.zero_grad(set_to_none=True)
            loss.backward()
            actor_loss, log_prob = float(loss.detach()), log_prob.detach()
        self.actor_optimizer.step()
        self._losses["actor_loss"].append(actor_loss)
        self._losses["entropy"].append(float(-log_prob.mean()))
        if self.config.autotune:
            alpha_loss = -(model.log_alpha.exp() * (log_prob.detach() + self.target_entropy)).mean()
            self.alpha_optimizer.zero_grad(set_to_none=True)
            alpha_loss.backward()
            self.alpha_optimizer.step()
        self._losses["alpha"].append(self.alpha)

    def _written_out_actor_gradient(self, observations: torch.Tensor) -> tuple[float, torch.Tensor]:
        """The actor loss ``mean_b(alpha log pi(a|s) - min_k Qk(s, a))``, ``a = tanh(mean +
        std eps)``, and its gradient written into the mean's and log-std's ``.grad`` without
        autograd (MLP networks' layer tables); returns the loss and ``log pi``. Per row::

            dL/da       = -dQ_k/da (k the smaller critic) + alpha 2a / (1 - a^2 + 1e-6)
            dL/du       = dL/da (1 - a^2)
            dL/dmean    = dL/du
            dL/dlog_std = dL/du std eps - alpha            (log pi holds -log_std)
            dL/draw     = dL/dlog_std (high - low) / 2 (1 - tanh(raw)^2)

        then the layers backwards (:mod:`neuroplug.nets.gradients`): with the log-std head on
        the trunk, ``dL/dW = draw^T h``, ``dL/db = sum draw`` and ``draw W`` joins the mean's
        gradient at the features h; otherwise both networks backwards on their own."""
        model, alpha = self.model, self.alpha
        low, high = model.bounds
        network = model.network
        mean_tensors = network.layout.split(model.actor.detach())
        with torch.no_grad():
            observations = observations.float()
            mean, mean_kept = gradients.forward(
                network.layers, network.layout, mean_tensors, observations
            )
            if model.trunk_head:
                features = mean_kept[-1]  # the last layer's input
                weight, bias = head_tensors(model.log_std.detach(), mean.shape[-1])
                raw = torch.addmm(bias, features, weight.T)
            else:
                log_stds = model.log_std_network
                log_std_tensors = log_stds.layout.split(model.log_std.detach())
                raw, raw_kept = gradients.forward(
                    log_stds.layers, log_stds.layout, log_std_tensors, observations
                )
            log_std = squash_log_std(raw, low, high)
            std = log_std.exp()
            noise = torch.randn(mean.shape, generator=self.generator, device=mean.device)
            u = mean + std * noise
            actions = torch.tanh(u)
            log_prob = squashed_log_prob(u, noise, log_std)
            values, action_grads = critic_action_gradients(model.critic, observations, actions)
            smaller = values.argmin(dim=0)  # min's gradient flows to the critic it took
            value = values.gather(0, smaller.unsqueeze(0)).squeeze(0)
            value_grad = action_grads.gather(
                0, smaller.view(1, -1, 1).expand(1, *actions.shape)
            ).squeeze(0)
            one_minus = 1 - actions.square()
            grad_actions = -value_grad + alpha * 2 * actions / (one_minus + 1e-6)
            grad_u = grad_actions * one_minus / len(observations)
            grad_log_std = grad_u * std * noise - alpha / len(observations)
            grad_raw = grad_log_std * 0.5 * (high - low) * (1 - torch.tanh(raw).square())
            for parameter in (model.actor, model.log_std):
                if parameter.grad is None:
                    parameter.grad = torch.zeros_like(parameter)
            into = network.layout.split(model.actor.grad)
            if model.trunk_head:
                grad_weight, grad_bias = head_tensors(model.log_std.grad, mean.shape[-1])
                torch.mm(grad_raw.T, features, out=grad_weight)
                torch.sum(grad_raw, 0, out=grad_bias)
                gradients.backward(
                    network.layers, network.layout, mean_tensors, mean_kept, mean, grad_u,
                    into, grad_features=grad_raw @ weight,
                )  # fmt: skip
            else:
                gradients.backward(
                    network.layers, network.layout, mean_tensors, mean_kept, mean, grad_u, into
                )
                gradients.backward(
                    log_stds.layers, log_stds.layout, log_std_tensors, raw_kept, raw,
                    grad_raw, log_stds.layout.split(model.log_std.grad),
                )  # fmt: skip
            loss = float((alpha * log_prob - value).mean())
        return loss, log_prob

    def _method_state(self) -> dict[str, torch.Tensor]:
        return self.target_critic.state_dict()

    def _load_method_state(self, state: dict[str, torch.Tensor]) -> None:
        self.target_critic.load_state_dict(state)
