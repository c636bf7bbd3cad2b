"""The lineage of an archive's elites: replaying recipes gives the very weights a run made,
batched or not, after pruning and after a checkpoint round trip."""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.evolution.lineage import (
    Lineage,
    fresh_members,
    iso_line_members,
)

PARAMS = 37  # not a multiple of any vector width: rows straddle the vector loops' tails


def initializer(seed: int) -> torch.Tensor:
    return torch.randn(PARAMS, generator=torch.Generator().manual_seed(seed))


def lineage() -> Lineage:
    return Lineage(PARAMS, initializer, init_sigma=0.1, iso_sigma=0.05, line_sigma=0.5)


def evolve(tree: Lineage, generations: int, size: int = 6, keep: int = 4):
    """A toy archive: the first ``keep`` children of each generation replace the elites.
    Returns the elites' ids and weights as made (never replayed)."""
    rng = np.random.default_rng(0)
    seeds = torch.arange(2 * size).reshape(2, size)
    ids, weights = tree.fresh(seeds[0], seeds[1])
    elite_ids, elites = ids.tolist(), weights
    for _ in range(generations):
        first, second = (torch.from_numpy(rng.integers(0, len(elite_ids), size)) for _ in "ab")
        ids = torch.tensor(elite_ids)
        seeds = torch.from_numpy(rng.integers(0, 2**31, size))
        lines = torch.from_numpy(rng.standard_normal(size)).float()
        ids, weights = tree.iso_line(
            ids[first], ids[second], elites[first], elites[second], seeds, lines
        )
        elite_ids = elite_ids[keep:] + ids[:keep].tolist()
        elites = torch.cat([elites[keep:], weights[:keep]])
        tree.keep(elite_ids)
    return elite_ids, elites


def test_replaying_the_lineage_gives_the_elites_bit_for_bit():
    tree = lineage()
    elite_ids, elites = evolve(tree, generations=8)
    assert torch.equal(tree.build(elite_ids), elites)
    assert torch.equal(tree.build(elite_ids[::-1]), elites.flip(0))


def test_a_row_is_the_same_alone_as_within_a_batch():
    generator = torch.Generator().manual_seed(1)
    parents, partners = torch.randn(5, PARAMS, generator=generator), torch.randn(5, PARAMS)
    seeds, lines = torch.arange(5) * 7919, torch.randn(5, generator=generator)
    batch = iso_line_members(parents, partners, seeds, lines, 0.05, 0.5)
    for row in range(5):
        alone = iso_line_members(
            parents[row : row + 1], partners[row : row + 1], seeds[row : row + 1],
            lines[row : row + 1], 0.05, 0.5,
        )  # fmt: skip
        assert torch.equal(alone[0], batch[row])
    fresh = fresh_members(torch.arange(4), torch.arange(4, 8), 0.1, initializer, PARAMS)
    assert torch.equal(fresh_members(torch.tensor([2]), torch.tensor([6]), 0.1, initializer,
                                     PARAMS)[0], fresh[2])  # fmt: skip


def test_iso_line_children_move_along_the_line_between_their_parents():
    parents, partners = torch.zeros(1, PARAMS), torch.ones(1, PARAMS)
    # Without isotropic noise a child lies on the line, line_sigma * z of the way.
    child = iso_line_members(parents, partners, torch.tensor([3]), torch.tensor([0.4]), 0.0, 0.5)
    assert torch.allclose(child, torch.full((1, PARAMS), 0.2))


def test_keep_forgets_the_nodes_no_elite_descends_from():
    tree = lineage()
    elite_ids, _ = evolve(tree, generations=6)
    everything = len(tree)
    tree.keep(elite_ids[:1])
    assert 1 <= len(tree) < everything
    assert elite_ids[0] in tree.nodes and elite_ids[-1] not in tree.nodes


def test_the_lineage_survives_a_checkpoint_round_trip():
    tree = lineage()
    elite_ids, elites = evolve(tree, generations=5)
    extra = tree.add_weights(torch.full((2, PARAMS), 3.0)).tolist()
    restored = lineage()
    restored.load_state_dict(tree.state_dict())
    assert restored.next_id == tree.next_id
    assert torch.equal(restored.build(elite_ids + extra)[: len(elite_ids)], elites)
    assert torch.equal(restored.build(extra), torch.full((2, PARAMS), 3.0))


def test_rebase_keeps_the_weights_and_drops_every_recipe():
    tree = lineage()
    elite_ids, elites = evolve(tree, generations=3)
    ids = tree.rebase(elites)
    assert len(tree) == len(ids) == tree.stored_weights() == len(elites)
    assert torch.equal(tree.build(ids), elites)
