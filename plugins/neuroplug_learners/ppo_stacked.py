"""The PPO update of a population's members as one computation over members.

Batched acting alone leaves a population of small learners as slow as K separate ones: on
CartPole the members' updates, not acting, take most of the time (20 epochs of a few
hundred transitions, where a step's fixed costs dwarf its arithmetic). So the members'
updates are stacked too: member k's rollout becomes row k of ``(K, b, ...)`` tensors, and
each gradient step is one batched forward, one written-out loss gradient and one batched
backward for all members (:func:`neuroplug.nets.gradients.forward_stacked`), then each
member's own gradient clip and Adam step on its row of a ``(K, D)`` buffer. Each member
keeps its own settings (learning rate and schedule, clip range, coefficients, discount:
broadcast as ``(K, 1)`` columns), its own Adam moments and step count, and its own
minibatch order (its generator), exactly the state :class:`~neuroplug_learners.ppo.
PPOUpdate` keeps; the stacks are filled from the members before an update and written back
after it, so checkpoints, copies between members and a lone learner see no difference.

The loss and its gradient are :func:`neuroplug_learners.ppo.ppo_loss_gradients`, the one
a lone learner steps (it is a population of one), over a member's valid transitions: the
rows EnvPool's auto-resets made (different in number per member) stay in the stacks with
weight 0, and each mean divides by the member's own count of valid rows. With one
minibatch per epoch that is the per-member update's arithmetic
(``tests/plugins/neuroplug_learners/test_ppo_stacked.py`` checks one against the other); with
several, a member's minibatches are cut from all its rows, valid or not, so their sizes in
valid rows vary a little. A member's rows pass through its own matrices only, so the other
members' values never reach its results; their number shapes the batched products, so a
member updated in another company agrees to rounding (a run's company, the whole
population, is fixed: its updates are exact from its seed, ``docs/reproducibility.md``).

It serves actor-critics the written-out backward covers (an MLP actor and a separate MLP
critic), with categorical or Gaussian actions; other members (a shared convolutional
trunk) learn one by one.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from neuroplug.nets import gradients
from neuroplug.nets.layers import as_float
from neuroplug.optim.adam import adam_step
from neuroplug.rl.advantages import rollout_gae
from neuroplug.rl.distributions import Categorical, DiagonalGaussian
from neuroplug.rl.flat_parameters import clip_grad_norm
from neuroplug_learners.ppo_batches import minibatch_orders


@dataclass(frozen=True)
class MemberSettings:
    """:class:`PPOLossSettings` of K members side by side: each coefficient a ``(K, 1)``
    column (a member's own), the two switches shared."""

    clip_coef: torch.Tensor
    clip_value_loss: bool
    value_coef: torch.Tensor
    entropy_coef: torch.Tensor
    normalize_advantages: bool


def population_ppo_update(members: Sequence[Any]) -> PopulationPPOUpdate | None:
    """The members' PPO updates as one computation, or None where their networks or
    settings do not allow it (they then learn one by one)."""
    models = [member.model for member in members]
    first = members[0].config
    stackable = all(model.written_out and not model.shared_trunk for model in models) and all(
        (member.config.epochs, member.config.minibatches) == (first.epochs, first.minibatches)
        and member.config.clip_value_loss == first.clip_value_loss
        and member.config.normalize_advantages == first.normalize_advantages
        for member in members
    )
    return PopulationPPOUpdate(members) if stackable else None


class PopulationPPOUpdate:
    """PPO updates of ``members`` (learners with a ``model`` ActorCritic and an ``update``
    :class:`~neuroplug_learners.ppo.PPOUpdate`) stepped together."""

    def __init__(self, members: Sequence[Any]) -> None:
        self.members = list(members)
        model = self.members[0].model
        self.actor_layers = model.network.layers
        self.critic_layers = model.critic.layers
        trained = self.members[0].update.trained
        # Where each named tensor lives in a member's flat buffer (the same for every member).
        starts = itertools.accumulate(trained.sizes, initial=0)
        offsets = {
            parameter.data_ptr(): start
            for parameter, start in zip(trained.parameters, starts, strict=False)
        }
        # The actor's and the critic's slots share names (the critic is the network resized).
        self.actor_slots, self.critic_slots = (
            {
                name: (offsets[tensor.data_ptr()], tuple(tensor.shape))
                for name, tensor in tensors.items()
            }
            for tensors in (model.policy_tensors(), model.critic_tensors())
        )
        self.log_std_slot = (
            None
            if model.log_std is None
            else {"log_std": (offsets[model.log_std.data_ptr()], tuple(model.log_std.shape))}
        )

    @staticmethod
    def _views(stack: torch.Tensor, slots: dict) -> dict[str, torch.Tensor]:
        """Slot name -> ``(K, *shape)`` view of a ``(K, D)`` stack."""
        count = len(stack)
        return {
            name: stack[:, start : start + math.prod(shape)].view(count, *shape)
            for name, (start, shape) in slots.items()
        }

    def learn(self, rollout) -> list[dict[str, float]]:
        """GAE and the PPO update of every member on its part of ``rollout`` (member k's
        columns ``k*n .. k*n+n-1``: its own envs, then any it played in as a guest,
        :mod:`neuroplug.rl.guest_steps`); returns each member's statistics."""
        members, count = self.members, len(self.members)
        n = rollout.values.shape[1] // count
        configs = [member.config for member in members]
        device = rollout.values.device
        for member in members:
            member.update.set_learning_rate_fraction(member.learning_rate_fraction())

        def per_env(name: str) -> torch.Tensor:
            values = torch.tensor([getattr(config, name) for config in configs], device=device)
            return values.repeat_interleave(n)

        rollout = self._scaled(rollout)
        advantages, returns = rollout_gae(rollout, per_env("gamma"), per_env("gae_lambda"))

        def by_member(tensor: torch.Tensor) -> torch.Tensor:
            # (T, K*n, ...) -> (K, T*n, ...): each member's transitions in one row.
            steps = tensor.shape[0]
            tensor = tensor.reshape(steps, count, n, *tensor.shape[2:]).transpose(0, 1)
            return tensor.reshape(count, steps * n, *tensor.shape[3:])

        observations = as_float(by_member(rollout.observations), torch.float32)
        actions = by_member(rollout.actions)
        mask = by_member(rollout.valid).float()
        rows = torch.stack(
            [
                by_member(rollout.log_probs),
                by_member(rollout.values),
                by_member(advantages),
                by_member(returns),
            ],
            -1,
        )
        stats = self._run(observations, actions, rows, mask)
        for k, member in enumerate(members):
            valid = mask[k] > 0
            target, predicted = rows[k, valid, 3], rows[k, valid, 1]
            variance = float(target.var()) if len(target) > 1 else 0.0
            residual = float((target - predicted).var()) if len(target) > 1 else 0.0
            stats[k]["explained_variance"] = 1.0 - residual / variance if variance > 0 else 0.0
            stats[k]["learning_rate"] = member.update.optimizer.learning_rate
            stats[k]["policy_version"] = float(member.update.version)
        return stats

    def _scaled(self, rollout):
        """``rollout`` with each member's envs' rewards scaled by its own scaler
        (``algo.reward_norm``; :meth:`neuroplug_learners.ppo.PPO.scaled`)."""
        scalers = [getattr(member, "reward_scaler", None) for member in self.members]
        if all(scaler is None for scaler in scalers):
            return rollout
        n, rewards = rollout.values.shape[1] // len(self.members), rollout.rewards.clone()
        for k, scaler in enumerate(scalers):
            if scaler is not None:
                envs = slice(k * n, (k + 1) * n)
                rewards[:, envs] = scaler.scale(
                    rollout.rewards[:, envs], rollout.valid[:, envs], rollout.ended[:, envs]
                )
        return dataclasses.replace(rollout, rewards=rewards)

    def _run(
        self,
        observations: torch.Tensor,
        actions: torch.Tensor,
        rows: torch.Tensor,
        mask: torch.Tensor,
    ) -> list[dict[str, float]]:
        """E epochs of M minibatches for every member at once (PPOUpdate.run, stacked)."""
        members = self.members
        count, size = mask.shape
        first = members[0]
        config = first.config
        optimizer = first.update.optimizer
        device = observations.device
        size_d = first.update.trained.flat.numel()
        flat = _padded_stack([member.update.trained.flat.detach() for member in members])
        grads = torch.zeros_like(flat)
        exp_avg = _padded_stack([member.update.optimizer.exp_avg for member in members])
        exp_avg_sq = _padded_stack([member.update.optimizer.exp_avg_sq for member in members])
        steps = torch.tensor(
            [float(member.update.optimizer.steps) for member in members], device=device
        ).unsqueeze(1)

        def column(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, device=device).unsqueeze(1)

        settings = {
            name: column([getattr(member.config, name) for member in members])
            for name in ("clip_coef", "value_coef", "entropy_coef", "max_grad_norm")
        }
        loss_settings = MemberSettings(
            settings["clip_coef"],
            config.clip_value_loss,
            settings["value_coef"],
            settings["entropy_coef"],
            config.normalize_advantages,
        )
        learning_rates = column([member.update.optimizer.learning_rate for member in members])
        actor, critic = self._views(flat, self.actor_slots), self._views(flat, self.critic_slots)
        actor_grads = self._views(grads, self.actor_slots)
        critic_grads = self._views(grads, self.critic_slots)
        log_std = log_std_grad = None
        if self.log_std_slot is not None:
            log_std = self._views(flat, self.log_std_slot)["log_std"]
            log_std_grad = self._views(grads, self.log_std_slot)["log_std"]
        step = max(1, size // config.minibatches)
        whole = (observations, actions, rows, mask)
        last_epoch: list[torch.Tensor] = []
        members_index = torch.arange(count, device=device).unsqueeze(1)
        loss_gradients = first.update.loss_gradients
        generators = [member.generator for member in members]
        for chosen, last in minibatch_orders(
            size, config.epochs, config.minibatches, generators, device
        ):
            batch = (
                whole if chosen is None else tuple(part[members_index, chosen] for part in whole)
            )
            inputs, batch_actions, batch_rows, batch_mask = batch
            logits, actor_inputs = gradients.forward_stacked(self.actor_layers, actor, inputs)
            values, critic_inputs = gradients.forward_stacked(self.critic_layers, critic, inputs)
            policy = (
                Categorical(logits)
                if log_std is None
                else DiagonalGaussian(logits, log_std.unsqueeze(1))
            )
            grads_out = loss_gradients(
                loss_settings,
                policy,
                values.squeeze(2),
                batch_actions,
                batch_rows,
                batch_mask,
                last,
            )
            grad_logits, grad_values = grads_out.outputs, grads_out.values
            gradients.backward_stacked(
                self.actor_layers, actor, actor_inputs, logits, grad_logits, actor_grads
            )
            gradients.backward_stacked(
                self.critic_layers,
                critic,
                critic_inputs,
                values,
                grad_values.unsqueeze(2),
                critic_grads,
            )
            if log_std_grad is not None:
                log_std_grad.copy_(grads_out.log_std.squeeze(1))
            # Each member's clip and Adam step, its row of the stacked buffers.
            clip_grad_norm(grads, settings["max_grad_norm"], dim=1)
            steps += 1
            adam_step(optimizer, flat, grads, exp_avg, exp_avg_sq, steps, learning_rates)
            if last:
                last_epoch.append(grads_out.stats)
        versions = config.epochs * len(range(0, size - step + 1, step))
        for k, member in enumerate(members):
            update = member.update
            update.trained.flat.data.copy_(flat[k, :size_d])
            update.optimizer.exp_avg.copy_(exp_avg[k, :size_d])
            update.optimizer.exp_avg_sq.copy_(exp_avg_sq[k, :size_d])
            update.optimizer.steps = int(steps[k])
            update.version += versions
        means = torch.stack(last_epoch).mean(0).tolist()  # (K, stats): one read per update
        names = first.update.stat_names
        return [dict(zip(names, member_means, strict=True)) for member_means in means]


ROW_ALIGNMENT = 64
"""Floats per member row are padded to a multiple of this (with zeros, which stay zero):
PyTorch's CPU kernels compute a tensor's whole SIMD vectors and its last few elements by
different code (``lerp_`` and ``addcmul_`` fuse multiply-adds in one, not the other), so
without padding a member's last parameters would round differently with the number of
members after it."""


def _padded_stack(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """``(K, D')``: the rows side by side, each padded with zeros to a multiple of
    :data:`ROW_ALIGNMENT`."""
    size = rows[0].numel()
    padded = -(-size // ROW_ALIGNMENT) * ROW_ALIGNMENT
    stack = rows[0].new_zeros((len(rows), padded))
    for k, row in enumerate(rows):
        stack[k, :size] = row.reshape(-1)
    return stack
