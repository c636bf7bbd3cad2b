"""The learners and their opponents acting in one batched forward.

Each step, a group's lanes are split by who plays them: a learner (its own agents, and
every agent of a game against itself), one of its frozen snapshots, a scripted bot, or
another member of the population (``selfplay.members``: its live weights, not learned
from). A
population's members (``algo=pbt``) each have a league over their own envs. The
network-driven lanes go through **one** forward of the stacked weights ``[learner 1, ...,
learner K, snapshot 1, ...]`` (:func:`~neuroplug.rl.acting.act_in_runs`: each player's
lanes in runs paired with its weights, heterogeneous batching). Only the players with a
game in the group take part, and a player with no lane costs nothing. Bots are called on
their lanes' observations. A snapshot's lanes carry their own recurrent states, reset with
every lane's at a game's start.

Every call's learnable lanes are kept for the rollout loop (:meth:`SelfPlayActing.
learnable_mask`), so each learner learns only from its own agents' steps.
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
BOT = -1
"""A lane's position when a bot plays it (no network)."""


class SelfPlayActing(Acting):
    """The learners' acting (``inner``, an :class:`ActorCriticActing` over them) widened
    to every league's players (``leagues``: :class:`~neuroplug.rl.self_play.leagues.
    Leagues`); see the module docstring."""

    def __init__(self, inner: ActorCriticActing, leagues: Any) -> None:
        super().__init__(inner.members, inner.envs_per_member)
        self.inner = inner
        self.learners = list(inner.members)
        self.leagues = leagues
        self.calls: dict[tuple[int, int], list[np.ndarray]] = {}
        self.players: list[tuple[np.ndarray, np.ndarray]] = [
            (np.array([LIVE]), np.array([k])) for k in range(len(self.learners))
        ]
        """Per league, its players' pool ids (sorted) and each one's place in the stack
        (:data:`BOT` for a bot), read at each refresh: a step looks its lanes up at once."""

    def refresh(self) -> None:
        """Stack the learners' weights and every league's snapshots (they change only
        between segments; the learners' every rollout)."""
        holders, self.players = [], []
        for k, league in enumerate(self.leagues.each):
            places = {LIVE: k}
            for entry in league.pool.entries.values():
                if entry.kind == "snapshot":
                    places[entry.id] = len(self.learners) + len(holders)
                    holders.append(SimpleNamespace(model=entry.model, device=self.device))
                elif entry.kind == "member":  # another learner, as it is now
                    places[entry.id] = entry.member
                elif entry.kind == "bot":
                    places[entry.id] = BOT
            ids = np.array(sorted(places), np.int64)
            self.players.append((ids, np.array([places[int(i)] for i in ids], np.int64)))
        self.inner.members = [*self.learners, *holders]
        self.inner.refresh()
        self.calls = {}

    def act(self, observations, rows, states, generator):
        positions, live, bots = self._players(rows)
        self.calls.setdefault((rows.start, rows.stop), []).append(live)
        if not bots and (positions == positions[0]).all():
            # One player: its plain forward.
            member = torch.tensor([int(positions[0])])
            return self.inner.act_members(observations, member, states, generator)
        count = len(observations)
        networked = np.flatnonzero(positions != BOT)
        parts = []
        if len(networked):
            parts.append(
                (networked, self._forward(observations, networked, positions, states, generator))
            )
        for k, id_, lanes in bots:
            bot = self.leagues.each[k].pool.entries[id_].bot
            parts.append((lanes, self._bot(bot, self.leagues.each[k], observations, lanes, states)))
        return _merge(parts, count, observations.device)

    def _players(self, rows: slice) -> tuple[np.ndarray, np.ndarray, list]:
        """Per lane of ``rows``: its player's place in the stack (:data:`BOT` for a bot's),
        whether a learner plays it, and each bot's lanes ``(league, id, lanes)``."""
        positions = np.empty(rows.stop - rows.start, np.int64)
        live = np.empty(len(positions), bool)
        bots = []
        for k, league, mine, within in self.leagues.overlapping(rows):
            ids = league.seats.policy_ids(mine)
            known, places = self.players[k]
            found = np.minimum(np.searchsorted(known, ids), len(known) - 1)
            if (known[found] != ids).any():
                missing = sorted(set(ids.tolist()) - set(known.tolist()))
                raise RuntimeError(f"self-play seated pool entries {missing} it no longer holds")
            positions[within] = places[found]  # no loop over lanes
            live[within] = ids == LIVE
            is_bot = positions[within] == BOT
            for id_ in dict.fromkeys(ids[is_bot].tolist()):
                bots.append((k, id_, np.flatnonzero(ids == id_) + within.start))
        return positions, live, bots

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

    def _forward(self, observations, lanes, positions, states, generator) -> Acted:
        """The network players' choices on ``lanes``: one forward (:func:`act_in_runs`)."""
        index = torch.as_tensor(lanes, device=observations.device)
        return act_in_runs(
            self.inner,
            observations[index],
            positions[lanes],
            None if states is None else states[index],
            generator,
        )

    def _bot(self, bot, league, observations, lanes, states) -> Acted:
        """A bot's choices on ``lanes``: no log-probabilities or values (never learned from)."""
        env = self.inner.env
        chosen = np.asarray(bot(observations[lanes].cpu().numpy(), league.rng))
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
