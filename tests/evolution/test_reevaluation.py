"""When an archive's elites are re-evaluated (every N generations, or automatically at about a
tenth of the offspring's episodes, or never), and what a re-evaluation reports: the
corrected archive's QD-score beside the stored one."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neuroplug.evolution.archive import GridArchive
from neuroplug.evolution.archive_config import ReevaluationConfig
from neuroplug.evolution.reevaluation import ElitesReevaluation
from neuroplug.testing.synthetic import synthetic_result


def _reevaluation(**settings) -> ElitesReevaluation:
    """A re-evaluation of 3 elites in a four-cell archive over [0, 4)."""
    archive = GridArchive([4], 2, np.array([[0.0, 4.0]]))
    params = torch.arange(6.0).reshape(3, 2)
    archive.add(params, np.array([1.0, 5.0, 2.0]), np.array([[0.5], [1.5], [3.5]]))
    return ElitesReevaluation(ReevaluationConfig(name="qd", **settings), archive)


def _due_at(reevaluation: ElitesReevaluation, generations: int, episodes: int) -> list[int]:
    """The generations, of ``generations`` of ``episodes`` offspring episodes each, that
    re-evaluate (each re-evaluation folded at once, every elite staying in its cell)."""
    archive, due = reevaluation.archive, []
    for completed in range(1, generations + 1):
        if reevaluation.due(completed, episodes):
            due.append(completed)
            cells = archive.occupied
            fresh = synthetic_result(archive.fitness[cells], behaviors=archive.descriptors[cells])
            reevaluation.fold(fresh.fitness, fresh, qd_offset=0.0)
    return due


def test_every_n_generations():
    assert _due_at(_reevaluation(reevaluate_every=3), 9, 64) == [3, 6, 9]


def test_automatically_at_a_tenth_of_the_offspring_episodes():
    # 3 elites x 4 episodes = 12 episodes a re-evaluation: due once the offspring have
    # played 120 since the last; 3 x 1 = 3: after 30.
    assert _due_at(_reevaluation(), 7, 50) == [3, 6]
    assert _due_at(_reevaluation(reevaluation_episodes=1), 4, 30) == [1, 2, 3, 4]
    assert _due_at(_reevaluation(reevaluation_episodes=1), 4, 29) == [2, 4]


def test_never_with_no_reevaluation_episodes():
    assert _due_at(_reevaluation(reevaluation_episodes=0, reevaluate_every=1), 5, 64) == []


def test_the_clock_is_checkpointed():
    reevaluation = _reevaluation()
    assert not reevaluation.due(1, 100)
    resumed = _reevaluation()
    resumed.load_state_dict(reevaluation.state_dict())
    assert resumed.due(2, 20) and reevaluation.due(2, 20)  # 120 episodes either way


def test_a_reevaluation_reports_the_corrected_and_the_stored_qd_score():
    reevaluation = _reevaluation(reevaluate_every=1, reevaluation_episodes=3)
    assert reevaluation.due(1, 64) and reevaluation.open
    population = reevaluation.elites()
    assert torch.equal(population.materialize(device="cpu"), torch.arange(6.0).reshape(3, 2))
    fresh = synthetic_result([0.0, 2.0, 1.0], episodes=3, behaviors=[[0.5], [1.5], [1.2]])
    stats = reevaluation.fold(fresh.fitness, fresh, qd_offset=0.0)
    assert not reevaluation.open
    assert stats == {
        "qd_score_reevaluated": pytest.approx(0.0 + 2.0),  # the third lands in cell 1, below
        "coverage_reevaluated": 2 / 4,
        "qd_score_before_reevaluation": pytest.approx(1.0 + 5.0 + 2.0),
        "reevaluated_elites": 3.0,
        # The third's mean descriptor, (3.5 + 3 x 1.2) / 4, is in cell 1 too, whose elite
        # keeps it: (5 + 3 x 2) / 4 against (2 + 3 x 1) / 4.
        "moved_elites": 1.0,
        "lost_elites": 1.0,
        "episodes_per_elite": 4.0,
    }
    assert reevaluation.archive.fitness[1] == pytest.approx((5 + 3 * 2) / 4)
