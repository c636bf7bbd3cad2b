"""``algo=dqn``: deep Q-networks.

Mnih et al. (2015), "Human-level control through deep reinforcement learning", Nature
518:529-533; double DQN from van Hasselt, Guez & Silver (2016). Per rollout of
``train_frequency`` steps of every env::

    act epsilon-greedily on Q (epsilon falls linearly from 1 to final_epsilon over
        exploration_fraction of the run's budget); store the transitions in the buffer
    every target_update_interval env steps:  Q_target <- Q
    once learning_starts steps are stored, gradient_steps times:
        sample a batch (s, a, r, s', done)
        y = r + gamma * (1 - done) * Q_target(s', argmax_a' Q_?(s', a'))   (? = target; online
                                                                           with double_q)
        (with n_step = n: r is the discounted sum of n rewards, s' the state n steps on and
        gamma is gamma^n; the window ends early where the episode does)
        Adam step on Huber(Q(s, a) - y), gradients clipped to max_grad_norm

The Q-network (:class:`neuroplug.rl.q_network.QNetwork`) is the policy network itself,
with no critic, so the deployed policy is its argmax. The buffer stores each frame once
(:mod:`neuroplug.rl.replay_buffer`). With ``checkpoint_replay`` the checkpoint keeps
the buffer; without it a resumed run starts with an empty buffer (and says so). Either way
a resumed run's envs start new episodes (:mod:`neuroplug.rl.base`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from neuroplug.api import LearnerContext
from neuroplug.nets import gradients
from neuroplug.optim.adam import FusedAdam
from neuroplug.rl.acting import Acted, Acting
from neuroplug.rl.flat_parameters import clip_grad_norm
from neuroplug.rl.q_network import QNetwork
from neuroplug.rl.replay import ReplayLearner
from neuroplug_learners.dqn_config import DQNConfig

PHASE_DRAW_BYTES = 1 << 24
"""A training phase draws its batches together up to this many bytes of observations (all
of a vector task's phase; two Nature-DQN batches of frames at a time)."""

TARGET_FORWARD_ROWS = 512
"""Rows per forward of the target network over a phase's batches: a 256-wide layer's
activations for 512 rows fit a core's L2 cache, where 8192 rows ran at half the speed per
row (``benchmarks/results/design_measurements.md``)."""


def huber(error: torch.Tensor) -> torch.Tensor:
    """The Huber loss (``smooth_l1_loss``, beta 1) of each TD error."""
    absolute = error.abs()
    return torch.where(absolute < 1, 0.5 * error.square(), absolute - 0.5)


class DQN(ReplayLearner):
    """DQN (optionally double) on EnvPool envs with a frame-deduplicating replay buffer."""

    config_class = DQNConfig
    losses = ("loss",)

    def __init__(self, config: DQNConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.q = self.model.policy
        """The Q-network's flat parameters (the policy it deploys is their argmax)."""
        self.target = self.q.detach().clone()
        # Fused: one kernel for the whole update, called without torch.optim's wrapper.
        self.optimizer = FusedAdam([self.q], config.learning_rate)
        self.since_target_update = 0
        # An MLP's step by the written-out backward pass (no autograd graph): per-op overhead
        # is most of a small network's step.
        self._written_out = gradients.written_out(context.network.layers)
        self._tensors: dict[str, torch.Tensor] = {}
        """The online network's tensors (views of ``q``, which Adam updates in place)."""
        self._grads: dict[str, torch.Tensor] = {}
        """... and of its gradient, which the written-out step overwrites."""

    def build_model(self) -> QNetwork:
        return QNetwork(self.context.network, self.context.initial_params)

    def epsilon(self) -> float:
        """The exploration rate now: linear from 1 to ``final_epsilon``, then constant."""
        budget = self.context.max_env_steps or 1
        horizon = self.config.exploration_fraction * budget
        done = self.env_steps
        if horizon <= 0:
            return self.config.final_epsilon
        fraction = min(1.0, done / horizon)
        return 1.0 + fraction * (self.config.final_epsilon - 1.0)

    @classmethod
    def n_step_of(cls, config: DQNConfig) -> int:
        return config.n_step

    def rollout_steps(self) -> int:
        return self.config.train_frequency

    def optimizers(self) -> dict[str, FusedAdam]:
        return {"q": self.optimizer}

    def learning_rates(self) -> dict[str, float]:
        return {"q": self.config.learning_rate}

    def stored(self, added: int) -> None:
        """Refresh the target network every ``target_update_interval`` env steps."""
        self.since_target_update += added
        if self.since_target_update >= self.config.target_update_interval:
            self.target = self.q.detach().clone()
            self.since_target_update = 0

    def gradient_steps(self, added: int) -> int:
        """``gradient_steps`` a rollout (of ``train_frequency`` steps of every env)."""
        return self.config.gradient_steps

    def segment_stats(self) -> dict[str, float]:
        return {
            "epsilon": self.epsilon(),
            **super().segment_stats(),
            "buffer_bytes_per_transition": self.replay.buffer.bytes_per_transition,
        }

    @classmethod
    def population_acting(cls, members, envs_per_member: int) -> EpsilonGreedyActing:
        return EpsilonGreedyActing(members, envs_per_member)

    def training_phase(self, steps: int) -> None:
        """``steps`` gradient steps. The target network is fixed for the whole phase, so
        the batches are drawn together and every batch's ``Q_target(s', .)`` comes from one
        forward over all of them: one large product where there were ``steps`` small ones,
        each paying a small network's per-op overhead. (The draws are the same uniform
        choices as one batch at a time: nothing is stored between them.)"""
        size = self.config.batch_size
        # A drawn transition: s and s' as float32 in the forward.
        drawn_bytes = 2 * 4 * int(np.prod(self.context.env.obs_shape))
        per_draw = max(1, min(steps, PHASE_DRAW_BYTES // (size * drawn_bytes)))
        self._tensors = self.context.network.layout.split(self.q.detach())
        for first in range(0, steps, per_draw):
            count = min(per_draw, steps - first)
            drawn = self.replay.sample(self.device, count)
            with torch.no_grad():
                next_target = torch.cat(
                    [
                        self.model(rows, self.target)
                        for rows in drawn["next_observations"].split(TARGET_FORWARD_ROWS)
                    ]
                )
            errors = []
            for step in range(count):
                rows = slice(step * size, (step + 1) * size)
                batch = {name: value[rows] for name, value in drawn.items()}
                batch["next_target"] = next_target[rows]
                errors.append(self._gradient_step(batch))
            self._losses["loss"] += huber(torch.stack(errors)).mean(dim=1).tolist()

    def _gradient_step(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """One step; returns its TD errors ``Q(s, a) - y`` (the losses are computed from
        them once per phase: a dozen small ops a step, only for the log, otherwise)."""
        if self._written_out:
            error = self._written_out_step(batch)
        else:
            error = self._autograd_step(batch)
        clip_grad_norm(self.q.grad, self.config.max_grad_norm)
        self.optimizer.step()
        self.updates += 1
        return error

    def _targets(self, batch, next_online) -> torch.Tensor:
        """``r + discount * Q_target(s', a*)``, ``a*`` the online argmax (double DQN) or the
        target's; ``Q_target(s', .)`` is the batch's ``next_target``."""
        next_target = batch["next_target"]
        if self.config.double_q:
            next_value = next_target.gather(1, next_online.argmax(1, keepdim=True)).squeeze(1)
        else:
            next_value = next_target.max(dim=1).values
        # discounts = gamma ** n, or 0 where the episode terminated within the n steps.
        return batch["rewards"] + batch["discounts"] * next_value

    def _autograd_step(self, batch) -> torch.Tensor:
        with torch.no_grad():
            next_online = self.model(batch["next_observations"]) if self.config.double_q else None
            targets = self._targets(batch, next_online)
        q_values = self.model(batch["observations"])
        chosen = q_values.gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
        loss = F.smooth_l1_loss(chosen, targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return (chosen - targets).detach()

    def _written_out_step(self, batch) -> torch.Tensor:
        """The same step without autograd (an MLP's layer table): one forward of the online
        network (on s' and s together for double DQN, which picks a* with it), the Huber
        loss's gradient with respect to the chosen Q-values written out, and the layers'
        backward pass (:mod:`neuroplug.nets.gradients`) into the flat gradient. A small
        MLP's step is mostly per-op overhead."""
        network, size = self.context.network, len(batch["actions"])
        tensors = self._tensors
        with torch.no_grad():
            if self.config.double_q:
                both = torch.cat((batch["next_observations"], batch["observations"]))
            else:
                both = batch["observations"]
            outputs, layer_inputs = gradients.forward(network.layers, network.layout, tensors, both)
            skip = len(both) - size  # the s' rows ahead of s
            targets = self._targets(batch, outputs[:skip])
            q_values = outputs[skip:]
            actions = batch["actions"].unsqueeze(1)
            error = q_values.gather(1, actions).squeeze(1) - targets
            grad_outputs = torch.zeros_like(q_values)
            grad_outputs.scatter_(1, actions, (error.clamp(-1, 1) / size).unsqueeze(1))
            if self.q.grad is None:
                self.q.grad = torch.zeros_like(self.q)
                self._grads = network.layout.split(self.q.grad)
            kept = [inputs[skip:] for inputs in layer_inputs]
            gradients.backward(
                network.layers, network.layout, tensors, kept, q_values, grad_outputs, self._grads
            )
        return error

    def _method_state(self) -> dict[str, Any]:
        return {
            "target": self.target.cpu().clone(),
            "since_target_update": self.since_target_update,
        }

    def _load_method_state(self, state: dict[str, Any]) -> None:
        self.target = state["target"].to(self.device).clone()
        self.since_target_update = int(state["since_target_update"])


class EpsilonGreedyActing(Acting):
    """DQN members (one, alone) acting epsilon-greedily in one forward of their
    Q-networks. Each member's epsilon is read at the rollout's start (its env steps, and so
    its schedule, advance rollout by rollout)."""

    def refresh(self) -> None:
        members = self.members
        self.network = members[0].model.network
        self.q = torch.stack([member.q.detach() for member in members])
        epsilons = torch.tensor([member.epsilon() for member in members], device=self.device)
        self.epsilons = epsilons.repeat_interleave(self.envs_per_member)
        self.one = None

    @torch.no_grad()
    def act(self, observations, rows, states, generator):
        members = self.member_slice(rows)
        if members.stop - members.start == 1:  # one member: its plain forward
            if len(self.q) == 1:  # a lone member: its tensors split once per rollout
                if self.one is None:
                    self.one = self.network.layout.split(self.q[0])
                q = self.one
            else:
                q = self.q[members.start]
            q_values = self.network.forward_single(q, observations)
        else:
            q_values = self.network.forward_members(
                self.q[members], self.by_member(observations, members)
            )
            q_values = q_values.reshape(len(observations), -1)
        greedy = q_values.argmax(dim=1)
        explore = torch.rand(len(greedy), generator=generator, device=self.device)
        random = torch.randint(
            0, q_values.shape[1], (len(greedy),), generator=generator, device=self.device
        )
        actions = torch.where(explore < self.epsilons[rows], random, greedy)
        zeros = torch.zeros(len(actions), device=self.device)
        return Acted(actions, zeros, zeros, actions.cpu().numpy().astype(np.int32))
