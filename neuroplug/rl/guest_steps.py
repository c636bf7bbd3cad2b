"""A population member's part of a rollout when members play in each other's leagues
(``selfplay.members`` with ``selfplay.members_learn``): its own envs, then the envs of
other members where it played an agent with its live weights (a *guest*).

A guest's steps are on-policy for it: its own weights chose the actions, and the
log-probabilities, values and recurrent states the rollout holds for them are its own
(the one batched forward wrote each lane's player's). So a member learns from them as from
its own: each guest env is a whole column of the rollout (GAE needs its time order), valid
only where the member played it. Its seat there lasts a game, and every agent's episode
ends with the game, so no advantage crosses from a step it played to one it did not.

The number of such envs changes from rollout to rollout (the draws decide where a member
is a guest). Learners that update their members one by one take each member's part at its
own width; the stacked update (one computation for every member) needs one width, so the
parts are padded to the widest with columns valid nowhere (they weigh nothing in the loss).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from neuroplug.rl.sampler import Rollout

Columns = list[tuple[torch.Tensor, torch.Tensor, int]]
"""What :func:`member_columns` gives: per member, its columns, their validity, its guest
envs' count."""


def _own_envs(lanes: slice | torch.Tensor, device: torch.device) -> torch.Tensor:
    """A member's own envs as an index tensor."""
    if isinstance(lanes, slice):
        return torch.arange(lanes.start, lanes.stop, device=device)
    return lanes.to(device)


def member_columns(rollout: Rollout, lanes: Sequence[slice | torch.Tensor]) -> Columns:
    """Per member (``lanes``: each member's own envs): the rollout's columns it learns from
    (its own envs, then those it was a guest in), their validity for it, and how many are
    guest envs."""
    guests = rollout.guests
    device = rollout.valid.device
    parts = []
    for member, own in enumerate(lanes):
        own = _own_envs(own, device)
        if guests is None:
            parts.append((own, rollout.valid[:, own], 0))
            continue
        visited = torch.nonzero((guests == member).any(0)).squeeze(1)
        valid = torch.cat([rollout.valid[:, own], guests[:, visited] == member], 1)
        parts.append((torch.cat([own, visited]), valid, len(visited)))
    return parts


def member_rollouts(rollout: Rollout, parts: Columns) -> list[Rollout]:
    """Each member's part of ``rollout`` at its own width (``parts``:
    :func:`member_columns`)."""
    return [
        dataclasses.replace(rollout.columns(index), valid=valid, guests=None)
        for index, valid, _ in parts
    ]


def stacked_rollout(rollout: Rollout, parts: Columns) -> Rollout:
    """Every member's part of ``rollout`` (``parts``: :func:`member_columns`) side by side
    at one width, member by member (member k's columns ``k W .. (k + 1) W - 1``), for the
    stacked update: each padded to the widest with its first own env repeated, valid
    nowhere."""
    widest = max(len(index) for index, _, _ in parts)
    indices, valids = [], []
    for index, valid, _ in parts:
        padding = widest - len(index)
        indices.append(torch.cat([index, index[:1].repeat(padding)]))
        valids.append(torch.cat([valid, valid.new_zeros((len(valid), padding))], 1))
    return dataclasses.replace(
        rollout.columns(torch.cat(indices)), valid=torch.cat(valids, 1), guests=None
    )


def guest_shares(parts: Columns) -> list[float]:
    """Each member's share of the steps it learns from (``parts``: :func:`member_columns`)
    that it played as a guest in another member's envs."""
    shares = []
    for index, valid, visited in parts:
        total = int(valid.sum())
        guest = int(valid[:, len(index) - visited :].sum()) if visited else 0
        shares.append(guest / total if total else 0.0)
    return shares
