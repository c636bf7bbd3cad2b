"""The behavior archive: k-nearest-neighbour novelty, growth and exact checkpoints."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from neuroplug_algorithms.novelty import BehaviorArchive, novelty_proportional


def _brute_force_novelty(query: np.ndarray, archive: np.ndarray, k: int) -> float:
    distances = sorted(float(np.sqrt(((query - entry) ** 2).sum())) for entry in archive)
    return float(np.mean(distances[:k]))


def test_novelty_is_the_mean_distance_to_the_k_nearest_entries():
    rng = np.random.default_rng(0)
    archive = BehaviorArchive()
    entries = rng.normal(size=(40, 3))
    archive.add(entries[:25])
    archive.add(entries[25:])
    queries = rng.normal(size=(7, 3))
    expected = [_brute_force_novelty(query, entries, k=10) for query in queries]
    assert np.allclose(archive.novelty(queries, k=10), expected, rtol=1e-12)


def test_a_smaller_archive_than_k_uses_every_entry():
    archive = BehaviorArchive()
    archive.add(np.array([[0.0, 0.0], [3.0, 4.0]]))
    assert archive.novelty(np.array([[0.0, 0.0]]), k=10) == pytest.approx([2.5])
    assert archive.novelty(np.array([[0.0, 0.0]]), k=1) == pytest.approx([0.0])


def test_single_vectors_are_archived_one_row_each():
    archive = BehaviorArchive()
    archive.add(np.array([1.0, 2.0]))
    archive.add(np.array([1.0, 2.0]))
    assert len(archive) == 2
    assert archive.novelty(np.array([1.0, 2.0]), k=2) == pytest.approx([0.0])


def test_an_empty_archive_and_mismatched_sizes_are_errors():
    archive = BehaviorArchive()
    with pytest.raises(ValueError, match="empty"):
        archive.novelty(np.zeros((1, 2)), k=1)
    archive.add(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="size 3 do not match the archive's 2"):
        archive.add(np.zeros((1, 3)))


def test_a_checkpointed_archive_answers_identically():
    rng = np.random.default_rng(1)
    archive = BehaviorArchive()
    archive.add(rng.normal(size=(30, 128)))
    buffer = io.BytesIO()
    torch.save(archive.state_dict(), buffer)
    buffer.seek(0)
    restored = BehaviorArchive()
    restored.load_state_dict(torch.load(buffer, weights_only=False))
    queries = rng.normal(size=(5, 128))
    assert np.array_equal(restored.novelty(queries, k=10), archive.novelty(queries, k=10))
    restored.add(queries[:1])
    assert len(restored) == 31 and len(archive) == 30  # the restored copy is independent


def test_an_empty_archive_survives_a_checkpoint():
    restored = BehaviorArchive()
    restored.load_state_dict(BehaviorArchive().state_dict())
    assert len(restored) == 0


def test_selection_is_proportional_to_novelty_and_uniform_without_any():
    assert np.allclose(novelty_proportional(np.array([1.0, 3.0, 0.0])), [0.25, 0.75, 0.0])
    assert np.allclose(novelty_proportional(np.zeros(4)), 0.25)
