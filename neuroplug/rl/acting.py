"""How learners act on their envs: one call, one signature, one type, for a lone learner
and for a population of learners (a lone learner is a population of one).

The sampler asks an :class:`Acting` for the choices of a group of envs with
``acting.act(observations, rows, states, generator)`` and gets an :class:`Acted` back.

Deep Neuroevolution's trick — many *different* networks evaluated as one batched
computation — applied to a population of learners (``algo=pbt``): K members, each with its
own ``n`` envs, act through one :meth:`~neuroplug.nets.network.Network.forward_members` per
group step (each member's weights one slice of a ``(K, D)`` stack, its envs' observations
the matching slice of the inputs), not K forwards. The sampler's envs are laid out member
by member (member k owns envs ``k*n .. k*n+n-1``) and a group holds whole members, so a
group's rows name its members by position alone: no index tensor per step.

The stacks are taken from the members' models once per rollout (:meth:`refresh`, after
they learned), never per step. Actions are drawn for all rows in one call from the
population's generator: a member's actions depend on its slot in the population (fixed
for the run), so a run is reproducible from its seed; the members' learning streams
(minibatch order, replay draws) are their own.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from neuroplug.errors import ConfigError
from neuroplug.rl.actor_critic import env_actions
from neuroplug.rl.distributions import Categorical, DiagonalGaussian
from neuroplug.runtime.devices import on_cpu


class Acted(NamedTuple):
    """What a policy chose for a group of envs."""

    actions: torch.Tensor
    """``(n,)`` int64, or ``(n, A)`` pre-squash float actions: what the policy chose."""
    log_probs: torch.Tensor
    """``(n,)``: their log-probabilities (zeros for a policy without them, DQN's)."""
    values: torch.Tensor
    """``(n,)``: the critic's values of the observations (zeros without a critic)."""
    env_actions: np.ndarray
    """What the envs receive (indices; continuous actions squashed into the action box)."""
    states: torch.Tensor | None = None
    """A recurrent core's states after this step ``(n, H)``; None for a feed-forward one."""


def member_count(members: slice | torch.Tensor) -> int:
    """How many members a slice of the stack, or a tensor of member indices, names."""
    return members.stop - members.start if isinstance(members, slice) else len(members)


class Acting(ABC):
    """How a learner's members (one, or a population's) choose actions for their envs, all
    at once. A learner class gives its own with ``population_acting``."""

    def __init__(self, members: Sequence[Any], envs_per_member: int) -> None:
        """``members``: the population's learners (:class:`~neuroplug.rl.base.
        SegmentLearner` instances of one class), each acting on ``envs_per_member`` envs."""
        self.members = list(members)
        self.envs_per_member = envs_per_member
        self.device = self.members[0].device

    def member_slice(self, rows: slice) -> slice:
        """The members whose envs are the sampler's ``rows``: whole members (a group), or
        part of one member's envs (a shard smaller than a member)."""
        n = self.envs_per_member
        first = rows.start // n
        return slice(first, max(first + 1, rows.stop // n))

    def by_member(self, observations: torch.Tensor, members: slice | torch.Tensor) -> torch.Tensor:
        """``(rows, *obs)`` -> ``(members, rows per member, *obs)``: each member's envs
        side by side (``members`` a slice of the stack, or a tensor of member indices)."""
        count = member_count(members)
        return observations.reshape(count, len(observations) // count, *observations.shape[1:])

    one: Any = None
    """A lone member's weights as named tensors (split at its first act after a refresh)."""

    def snapshot(self) -> Acting:
        """The current weights and settings (:meth:`refresh`'s) without the members, on
        the CPU: what a sampler in another process acts with (it pickles small)."""
        copy = object.__new__(type(self))
        copy.__dict__.update(
            {
                name: on_cpu(value)
                for name, value in vars(self).items()
                if name not in ("members", "one")
            }
        )
        copy.members = []
        copy.one = None  # views of the weights, split again where they are used
        copy.device = torch.device("cpu")
        return copy

    @abstractmethod
    def refresh(self) -> None:
        """Take the members' current weights (and settings) for the next rollout."""

    @abstractmethod
    def act(
        self,
        observations: torch.Tensor,
        rows: slice,
        states: torch.Tensor | None,
        generator: torch.Generator,
    ) -> Acted:
        """The choices for the sampler's envs ``rows`` on their ``observations``, drawn
        from ``generator``; with a recurrent core, from its ``states`` ``(rows, H)`` (the
        sampler keeps them; None for a feed-forward policy)."""


class ActorCriticActing(Acting):
    """Members whose model is an :class:`~neuroplug.rl.actor_critic.ActorCritic`:
    the policy, and the value the learner stores, of every member in one forward each."""

    def refresh(self) -> None:
        models = [member.model for member in self.members]
        first = models[0]
        self.network = first.network
        self.shared_trunk = first.shared_trunk
        with torch.no_grad():
            self.actor = torch.stack([model.policy_vector() for model in models])
            if self.shared_trunk:
                heads = [model.value_head for model in models]
                self.value_weight = torch.stack([head.weight.detach().t() for head in heads])
                self.value_bias = torch.stack([head.bias.detach() for head in heads]).unsqueeze(1)
            else:
                self.critic_network = first.critic
                self.critic = torch.stack([model.critic_vector() for model in models])
            self.log_std = (
                None
                if first.log_std is None
                else torch.stack([model.log_std.detach() for model in models])
            )
        self.env = first.env
        self.one = None

    @torch.no_grad()
    def act(self, observations, rows, states, generator):
        return self.act_members(observations, self.member_slice(rows), states, generator)

    @torch.no_grad()
    def act_members(
        self,
        observations: torch.Tensor,
        members: slice | torch.Tensor,
        states: torch.Tensor | None,
        generator: torch.Generator,
    ) -> Acted:
        """The choices of ``members`` (a slice of the stack, or a tensor of member indices,
        one may repeat) on ``observations`` laid out member by member in equal runs: one
        forward of their stacked weights. Self-play's opponents act through it
        (:mod:`neuroplug.rl.self_play.acting`)."""
        count = observations.shape[0]
        new_states = None
        network = self.network
        if member_count(members) == 1:
            # One member (a lone learner, or a shard of one member's envs): its plain
            # forward, as its model computes it.
            first = members.start if isinstance(members, slice) else int(members[0])
            outputs, values, new_states = self._forward_one(first, observations, states)
        elif self.shared_trunk:  # a recurrent core is shared: each member runs its own
            inputs = self.by_member(observations, members)
            features, new_states = network.features_members_with_state(
                self.actor[members],
                inputs,
                None if states is None else self.by_member(states, members),
            )
            outputs = network.head_members(self.actor[members], features)
            values = torch.baddbmm(self.value_bias[members], features, self.value_weight[members])
        else:
            inputs = self.by_member(observations, members)
            outputs = network.forward_members(self.actor[members], inputs)
            values = self.critic_network.forward_members(self.critic[members], inputs)
        if outputs.dim() != 2:  # (members, rows per member, out) -> (rows, out)
            outputs = outputs.reshape(count, -1)
        if values.dim() != 1:
            values = values.reshape(count)
        if self.log_std is None:
            distribution = Categorical(outputs)
        else:
            per_member = count // member_count(members)
            log_std = self.log_std[members].repeat_interleave(per_member, dim=0)
            distribution = DiagonalGaussian(outputs, log_std)
        actions = distribution.sample(generator)
        if new_states is not None and new_states.dim() != 2:
            new_states = new_states.reshape(count, -1)
        return Acted(
            actions,
            distribution.log_prob(actions),
            values,
            env_actions(self.env, actions),
            new_states,
        )

    def critic_of(self, member: int) -> torch.Tensor | None:
        """Member ``member``'s separate critic (None with a shared trunk)."""
        return None if self.shared_trunk else self.critic[member]

    def _forward_one(
        self, member: int, observations: torch.Tensor, states: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Member ``member``'s outputs, values and new core states on its envs."""
        network = self.network
        if self.one is not None:
            actor, critic, value_weight, value_bias = self.one
        else:
            actor, critic = self.actor[member], self.critic_of(member)
            value_weight = value_bias = None
            if self.shared_trunk:
                value_weight, value_bias = self.value_weight[member], self.value_bias[member]
            if self.actor.shape[0] == 1:
                # A lone member acts through its tensors split once per rollout, not per
                # step (slicing a flat vector, or indexing the stacked weights, costs a
                # view per tensor on every forward).
                split = None if critic is None else self.critic_network.layout.split(critic)
                actor, critic = network.layout.split(actor), split
                self.one = (actor, critic, value_weight, value_bias)
        if not self.shared_trunk:
            values = self.critic_network.forward_single(critic, observations)
            return network.forward_single(actor, observations), values, None
        features, new_states = network.features_with_state(actor, observations, states)
        outputs = network.head(actor, features)
        values = torch.addmm(value_bias, features, value_weight)
        return outputs, values, new_states


def act_in_runs(
    acting: ActorCriticActing,
    observations: torch.Tensor,
    positions: np.ndarray,
    states: torch.Tensor | None,
    generator: torch.Generator,
) -> Acted:
    """The choices for rows whose members are ``positions`` (row ``j`` acted by member
    ``positions[j]`` of ``acting``'s stack, in any order): **one** forward, each member's
    rows cut into runs of ``g`` rows (``g`` the mean rows per member, so the padding is at
    most one run per member), each run a slice of the inputs paired with its member's
    weights, as a population's members are batched. Self-play's players and a world's
    policies per team or agent act through it."""
    order = np.argsort(positions, kind="stable")
    sorted_rows, sorted_positions = order, positions[order]
    distinct, starts, counts = np.unique(sorted_positions, return_index=True, return_counts=True)
    run = max(1, math.ceil(len(positions) / len(distinct)))
    layout, members, kept = [], [], []
    for member, start, size in zip(distinct, starts, counts, strict=True):
        mine = sorted_rows[start : start + size]
        for first in range(0, size, run):
            piece = mine[first : first + run]
            kept.append((len(layout), piece))
            layout.extend(piece.tolist() + [int(piece[0])] * (run - len(piece)))
            members.append(int(member))
    index = torch.as_tensor(layout, device=observations.device)
    acted = acting.act_members(
        observations[index],
        torch.tensor(members),
        None if states is None else states[index],
        generator,
    )
    back = np.empty(len(positions), dtype=np.int64)
    for at, piece in kept:
        back[piece] = np.arange(at, at + len(piece))
    take = torch.as_tensor(back, device=observations.device)
    return Acted(
        acted.actions[take],
        acted.log_probs[take],
        acted.values[take],
        acted.env_actions[back],
        None if acted.states is None else acted.states[take],
    )


class LaneActing(Acting):
    """Members that own fixed lanes of shared worlds (a world's policies per team or agent,
    :mod:`neuroplug.rl.agent_policies`): env ``i`` acted by member ``owners[i]``, a group's
    envs in one forward (:func:`act_in_runs`)."""

    def __init__(self, inner: ActorCriticActing, owners: np.ndarray) -> None:
        super().__init__(inner.members, 1)
        self.inner = inner
        self.owners = np.asarray(owners, np.int64)

    def refresh(self) -> None:
        self.inner.refresh()

    def snapshot(self) -> LaneActing:
        """The inner members' snapshot with the same lane owners: what a shard on a Ray
        actor acts with (the learners themselves stay here)."""
        copy = super().snapshot()
        copy.inner = self.inner.snapshot()
        return copy

    @torch.no_grad()
    def act(self, observations, rows, states, generator):
        positions = self.owners[rows]
        if (positions == positions[0]).all():
            member = torch.tensor([int(positions[0])])
            return self.inner.act_members(observations, member, states, generator)
        return act_in_runs(self.inner, observations, positions, states, generator)


def lane_acting(acting: Acting, owners: np.ndarray) -> LaneActing:
    """``acting``'s members on the lanes ``owners`` gives them; refused, naming
    ``env.policy_mapping``, for a learner that does not act as an actor-critic."""
    if not isinstance(acting, ActorCriticActing):
        name = type(acting.members[0]).__name__
        raise ConfigError(
            "env.policy_mapping",
            f"a policy per team or agent acts in one batched forward of actor-critics, and "
            f"{name} acts otherwise",
            "shared, or algo=ppo or appo",
        )
    return LaneActing(acting, owners)
