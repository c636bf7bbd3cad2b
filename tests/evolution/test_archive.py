"""The archive's episode counts: fresh episodes fold into each elite's means, an elite goes
back into the cell of its mean descriptor (where the best mean keeps a cell), the
corrected archive of fresh evaluations is scored on its own, and the checkpoint keeps
the counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neuroplug.evolution.archive import GridArchive


def _archive() -> GridArchive:
    """Four cells over [0, 4): elites in cells 0, 1 and 3, the first the mean of 2 episodes."""
    archive = GridArchive([4], 2, np.array([[0.0, 4.0]]))
    params = torch.arange(6.0).reshape(3, 2)
    fitness, descriptors = np.array([1.0, 5.0, 2.0]), np.array([[0.5], [1.5], [3.5]])
    archive.add(params, fitness, descriptors, [[10], [11], [13]], episodes=np.array([2, 1, 1]))
    return archive


def test_fresh_episodes_fold_into_each_elites_means():
    archive = _archive()
    cells = archive.occupied
    assert archive.episodes[cells].tolist() == [2, 1, 1]
    # 3 fresh episodes each (their means): 1.0 over 2 then 4.0 over 3 -> 2.8 over 5.
    moved = archive.fold(cells, np.array([4.0, 2.0, 0.0]), np.array([[0.7], [1.1], [3.1]]), 3)
    assert moved == {"moved_elites": 0.0, "lost_elites": 0.0}
    assert archive.episodes[cells].tolist() == [5, 4, 4]
    assert archive.fitness[cells] == pytest.approx([(2 * 1 + 3 * 4) / 5, (5 + 3 * 2) / 4, 2 / 4])
    assert archive.descriptors[cells, 0] == pytest.approx(
        [(2 * 0.5 + 3 * 0.7) / 5, (1.5 + 3 * 1.1) / 4, (3.5 + 3 * 3.1) / 4]
    )
    assert archive.genomes[0] == [10] and torch.equal(archive.params[0], torch.tensor([0.0, 1.0]))


def test_an_elite_whose_mean_descriptor_moves_competes_for_its_new_cell():
    archive = _archive()
    # Cell 0's elite (mean descriptor 1.1, fitness 2.8) moves into cell 1, whose elite
    # keeps it with the better mean (4.25); cell 3's elite (2.45) moves into the empty cell 2.
    moved = archive.fold(
        archive.occupied, np.array([4.0, 4.0, 0.0]), np.array([[1.5], [1.5], [2.1]]), 3
    )
    assert moved == {"moved_elites": 2.0, "lost_elites": 1.0}
    assert archive.occupied.tolist() == [1, 2]
    assert archive.fitness[[1, 2]] == pytest.approx([(5 + 3 * 4) / 4, 2 / 4])
    assert archive.descriptors[[1, 2], 0] == pytest.approx([1.5, (3.5 + 3 * 2.1) / 4])
    assert archive.genomes[1] == [11] and archive.genomes[2] == [13]
    assert archive.genomes[0] is None and archive.genomes[3] is None
    assert archive.episodes.tolist() == [0, 4, 4, 0]
    assert torch.equal(archive.params[2], torch.tensor([4.0, 5.0]))


def test_the_corrected_archive_holds_only_the_fresh_evaluations():
    # Flageat & Cully's corrected archive: the best fresh fitness per fresh cell.
    archive = _archive()
    scores = archive.metrics_of(np.array([4.0, 2.0, 0.0]), np.array([[1.5], [1.2], [3.9]]), -1.0)
    assert scores == {"qd_score": pytest.approx((4 + 1) + (0 + 1)), "coverage": 2 / 4}


def test_the_checkpoint_keeps_each_elites_episode_count():
    archive = _archive()
    archive.fold(archive.occupied, np.array([4.0, 2.0, 0.0]), np.array([[0.7], [1.1], [3.1]]), 3)
    loaded = GridArchive([4], 2, np.array([[0.0, 4.0]]))
    loaded.load_state_dict(archive.state_dict())
    assert np.array_equal(loaded.episodes, archive.episodes)
    assert np.array_equal(loaded.fitness, archive.fitness)
