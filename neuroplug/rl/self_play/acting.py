"""The learner and its opponents acting in one batched forward.

Each step, a group's lanes are split by who plays them: the learner (its own agents, and
every agent of a game against itself), a frozen snapshot, or a scripted bot. The
network-driven lanes go through **one** forward of the stacked weights ``[learner,
snapshot 1, ...]`` (:func:`~neuroplug.rl.acting.act_in_runs`: each player's lanes in runs
paired with its weights, heterogeneous batching). Only the players with a game
in the group take part, and a player with no lane costs nothing. Bots are called on their
lanes' observations. A snapshot's lanes carry their own recurrent states, reset with every
lane's at a game's start.

Every call's learnable lanes are kept for the rollout loop (:meth:`SelfPlayActing.
learnable_mask`), so the learner learns only from its own agents' steps.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from neuroplug.opponents.pool import LIVE
from neuroplug.rl.acting import Acted, Acting, ActorCriticActing, act_in_runs
from neuroplug.rl.actor_critic import env_actions

UNIT_EDGE = 1 - 1e-6


class SelfPlayActing(Acting):
    """A lone learner's acting (``inner``, an :class:`ActorCriticActing`) widened to the
    league's players; see the module docstring."""

    def __init__(self, inner: ActorCriticActing, league: Any) -> None:
        super().__init__(inner.members, inner.envs_per_member)
        self.inner = inner
        self.learner = inner.members[0]
        self.league = league
        self.calls: dict[tuple[int, int], list[np.ndarray]] = {}
        self.position = {LIVE: 0}
        self.bot_ids = np.zeros(0, np.int64)
        """The pool's bots' ids (fixed for the run), read at each refresh."""

    def refresh(self) -> None:
        """Stack the learner's weights and every snapshot in the pool (they change only
        between segments; the learner's every rollout)."""
        snapshots = [each for each in self.league.pool.entries.values() if each.kind == "snapshot"]
        holders = [SimpleNamespace(model=each.model, device=self.device) for each in snapshots]
        self.inner.members = [self.learner, *holders]
        self.inner.refresh()
        self.position = {LIVE: 0, **{each.id: k + 1 for k, each in enumerate(snapshots)}}
        entries = self.league.pool.entries.values()
        self.bot_ids = np.array([each.id for each in entries if each.kind == "bot"], np.int64)
        self.calls = {}

    def act(self, observations, rows, states, generator):
        seats, pool = self.league.seats, self.league.pool
        players = seats.policy_ids(rows)
        self.calls.setdefault((rows.start, rows.stop), []).append(players == LIVE)
        kinds = np.isin(players, self.bot_ids)  # once per step: no loop over lanes
        if not kinds.any() and (players == players[0]).all():
            # One player: its plain forward.
            member = torch.tensor([self.position[int(players[0])]])
            return self.inner.act_members(observations, member, states, generator)
        count = len(observations)
        networked = np.flatnonzero(~kinds)
        parts = []
        if len(networked):
            parts.append(
                (networked, self._forward(observations, networked, players, states, generator))
            )
        for id_ in dict.fromkeys(players[kinds].tolist()):
            lanes = np.flatnonzero(players == id_)
            parts.append((lanes, self._bot(pool.entries[id_].bot, observations, lanes, states)))
        return _merge(parts, count, observations.device)

    def learnable_mask(self, groups: list[slice], steps: int) -> np.ndarray:
        """``(steps, num_envs)``: whether the learner learns from each lane's step, from the
        rollout's calls (a group is asked once per step, in order, then once for the
        bootstrap values)."""
        mask = np.zeros((steps, sum(rows.stop - rows.start for rows in groups)), dtype=bool)
        for rows in groups:
            calls = self.calls.get((rows.start, rows.stop), [])
            if len(calls) != steps + 1:
                raise RuntimeError(
                    f"self-play saw {len(calls)} calls for envs {rows.start}-{rows.stop} in a "
                    f"rollout of {steps} steps: the sampler's contract changed"
                )
            mask[:, rows] = np.stack(calls[:steps])
        self.calls = {}
        return mask

    # ------------------------------------------------------------------------------

    def _forward(self, observations, lanes, players, states, generator) -> Acted:
        """The network players' choices on ``lanes``: one forward (:func:`act_in_runs`)."""
        index = torch.as_tensor(lanes, device=observations.device)
        positions = np.array([self.position[int(id_)] for id_ in players[lanes]], np.int64)
        return act_in_runs(
            self.inner,
            observations[index],
            positions,
            None if states is None else states[index],
            generator,
        )

    def _bot(self, bot, observations, lanes, states) -> Acted:
        """A bot's choices on ``lanes``: no log-probabilities or values (never learned from)."""
        env = self.inner.env
        chosen = np.asarray(bot(observations[lanes].cpu().numpy(), self.league.rng))
        device = observations.device
        if env.discrete:
            actions = torch.as_tensor(chosen.astype(np.int64), device=device)
            sent = env_actions(env, actions)
        else:
            low, high = env.action_low, env.action_high
            unit = np.clip(2 * (chosen - low) / (high - low) - 1, -UNIT_EDGE, UNIT_EDGE)
            actions = torch.as_tensor(np.arctanh(unit), dtype=torch.float32, device=device)
            sent = chosen.astype(np.float32)
        zeros = torch.zeros(len(lanes), device=device)
        kept = None if states is None else states[torch.as_tensor(lanes, device=device)]
        return Acted(actions, zeros, zeros, sent, kept)


def _merge(parts: list[tuple[np.ndarray, Acted]], count: int, device) -> Acted:
    """One :class:`Acted` of ``count`` rows from the parts' rows."""
    first = parts[0][1]
    actions = torch.empty(
        (count, *first.actions.shape[1:]), dtype=first.actions.dtype, device=device
    )
    log_probs = torch.empty(count, device=device)
    values = torch.empty(count, device=device)
    sent = np.empty((count, *first.env_actions.shape[1:]), dtype=first.env_actions.dtype)
    states = (
        None if first.states is None else torch.empty((count, first.states.shape[1]), device=device)
    )
    for lanes, acted in parts:
        index = torch.as_tensor(lanes, device=device)
        actions[index] = acted.actions.to(actions.dtype)
        log_probs[index] = acted.log_probs
        values[index] = acted.values
        sent[lanes] = acted.env_actions
        if states is not None:
            states[index] = acted.states
    return Acted(actions, log_probs, values, sent, states)
