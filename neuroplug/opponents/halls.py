"""Halls of fame, one per policy of a world (a policy per team or agent): a policy's game
against the others' past selves, drawn the same way by the learners' self-play
(:mod:`neuroplug.rl.self_play.team_league`) and the populations' arena
(:mod:`neuroplug.evolution.policy_arena`).

A game of ``policy`` is **live** (every policy as it is now) with probability
``latest_share``, and while another policy's hall is empty; else it is played against an
entry of every other policy's hall (the first drawn with that hall's draw table, the rest
with its :meth:`~neuroplug.opponents.pool.DrawTable.draw_other`), and only ``policy``'s
agents count.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neuroplug.opponents.pool import LIVE, DrawTable


def draw_against_halls(
    policy: int, tables: Sequence[DrawTable], rng: np.random.Generator
) -> tuple[int, ...] | None:
    """A game of ``policy`` (see the module docstring): None for a live game, else each
    policy's hall entry (:data:`LIVE` at ``policy`` itself). ``tables``: each policy's
    hall's draw table."""
    others = [other for other in range(len(tables)) if other != policy]
    if not all(tables[other].ids for other in others):
        return None
    first = tables[others[0]].draw(rng)
    if first == LIVE:
        return None
    drawn = [LIVE] * len(tables)
    drawn[others[0]] = first
    for other in others[1:]:
        drawn[other] = tables[other].draw_other(rng)
    return tuple(drawn)
