"""A member's part of a rollout when members play in each other's envs: its own columns,
then the envs it played in as a guest (valid only where it played), padded to one width for
the stacked update; guests' shares of what each member learns from."""

from __future__ import annotations

import dataclasses

import torch

from neuroplug.rl.guest_steps import guest_shares, member_columns, member_rollouts, stacked_rollout
from neuroplug.rl.sampler import Rollout

STEPS, ENVS = 4, 8  # two members of 4 envs each


def _rollout() -> Rollout:
    """Observations tell their env (column) and step; member 1 played env 2 (member 0's) at
    steps 1-3, member 0 played env 5 (member 1's) at steps 0-1 and env 7 at step 3."""
    cells = torch.arange(STEPS * ENVS, dtype=torch.float32).reshape(STEPS, ENVS)
    flags = torch.zeros(STEPS, ENVS, dtype=torch.bool)
    valid = torch.ones(STEPS, ENVS, dtype=torch.bool)
    guests = torch.full((STEPS, ENVS), -1)
    guests[1:, 2] = 1
    guests[:2, 5] = 0
    guests[3, 7] = 0
    for env in (2, 5, 7):  # the owner did not play those steps
        valid[:, env] &= guests[:, env] < 0
    return Rollout(
        cells.unsqueeze(-1), torch.zeros(STEPS, ENVS, dtype=torch.long), cells, cells, cells,
        flags, flags, valid, cells[-1], cells[-1].unsqueeze(-1), guests=guests,
    )  # fmt: skip


def _envs(part: Rollout) -> list[int]:
    return [int(cell) % ENVS for cell in part.observations[0, :, 0]]


LANES = [slice(0, 4), slice(4, 8)]


def test_a_member_learns_its_own_envs_then_those_it_played_in_only_where_it_played():
    rollout = _rollout()
    first, second = member_rollouts(rollout, member_columns(rollout, LANES))
    assert _envs(first) == [0, 1, 2, 3, 5, 7]
    assert _envs(second) == [4, 5, 6, 7, 2]
    assert first.guests is None and second.guests is None
    assert first.valid[:, 4].tolist() == [True, True, False, False]  # env 5: steps 0-1
    assert first.valid[:, 5].tolist() == [False, False, False, True]  # env 7: step 3
    assert second.valid[:, 4].tolist() == [False, True, True, True]  # env 2: steps 1-3
    assert first.valid[:, 2].tolist() == [True, False, False, False]  # its own env 2
    # Everything else of a column comes with it: its values, its bootstrap.
    torch.testing.assert_close(second.values[:, 4], rollout.values[:, 2])
    torch.testing.assert_close(second.next_values[4], rollout.next_values[2])


def test_the_stacked_rollout_pads_every_member_to_the_widest_with_columns_valid_nowhere():
    rollout = _rollout()
    stacked = stacked_rollout(rollout, member_columns(rollout, LANES))
    assert stacked.valid.shape == (STEPS, 12)  # two members of 6 columns
    first, second = member_rollouts(rollout, member_columns(rollout, LANES))
    assert torch.equal(stacked.valid[:, :6], first.valid)
    assert torch.equal(stacked.valid[:, 6:11], second.valid)
    assert not stacked.valid[:, 11].any()  # member 1's padding
    assert torch.equal(stacked.values[:, 6:11], second.values)


def test_without_guests_each_member_has_its_own_envs():
    rollout = dataclasses.replace(_rollout(), guests=None)
    first, second = member_rollouts(rollout, member_columns(rollout, LANES))
    assert (_envs(first), _envs(second)) == ([0, 1, 2, 3], [4, 5, 6, 7])
    assert stacked_rollout(rollout, member_columns(rollout, LANES)).valid.shape == (STEPS, ENVS)
    assert guest_shares(member_columns(rollout, LANES)) == [0.0, 0.0]


def test_a_guest_share_is_the_part_of_what_a_member_learns_that_it_played_as_a_guest():
    rollout = _rollout()
    # Member 0: 16 own cells less env 2's three, plus 3 guest steps; member 1: 16 less 3, 3.
    assert guest_shares(member_columns(rollout, LANES)) == [3 / 16, 3 / 16]
