"""Joining and ordering the transitions an evaluation played (:class:`~neuroplug.api.Transitions`),
whichever pools or shards played them."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from neuroplug.api import Transitions


def concatenate_transitions(parts: list[Transitions]) -> Transitions:
    """One batch of ``parts`` in order."""
    columns = [column.name for column in fields(Transitions)]
    return Transitions(
        *(np.concatenate([getattr(part, name) for part in parts]) for name in columns)
    )


def transition_rows(transitions: Transitions, rows: np.ndarray) -> Transitions:
    """The rows ``rows`` of ``transitions``, in that order."""
    return Transitions(*(getattr(transitions, column.name)[rows] for column in fields(Transitions)))
