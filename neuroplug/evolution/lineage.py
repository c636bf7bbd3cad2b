"""Elites as recipes: how a quality-diversity archive checkpoints its members compactly.

Every member an archive algorithm creates is a *node* of a lineage, described by how it
was made from earlier nodes rather than by its weights::

    fresh(s_0, s_1)        init(s_0) + init_sigma * eps(s_1)                 generation 0
    iso_line(p, q, s, z)   x_p + iso_sigma * eps(s) + line_sigma * z * (x_q - x_p)
    weights(w)             w itself (a member no recipe describes: a gradient step's)

``p`` and ``q`` are earlier nodes (Iso+LineDD's two elites, Vassiliades & Mouret 2018),
``s`` a noise seed (:mod:`neuroplug.population.noise`) and ``z`` the line step's N(0, 1) draw. An
archive cell holds a node id; the checkpoint keeps only the nodes the elites descend from
(a DAG: a node may be the parent of many and the partner of others), a few numbers each,
instead of one weight vector per cell: the deep GA's seed chains (Such et al. 2017)
extended to variation with two parents.

Replaying is exact. A node is built by one function, :func:`iso_line_members` or
:func:`fresh_members`, both at creation and on load, and each is a sequence of element-wise
operations (no fused multiply-add), so a row comes out bit-identical whether it is built
alone or within a batch. A resumed run therefore continues with the very weights it had.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from neuroplug.evolution.archive import Archive
from neuroplug.population.members import InitDraws, Population, draw_seeds
from neuroplug.population.noise import noise_vectors

FRESH, ISO_LINE, WEIGHTS = 0, 1, 2
"""Node kinds: ``fresh(s_0, s_1)``, ``iso_line(p, q, s, z)``, ``weights(w)``."""


def fresh_members(
    init_seeds: torch.Tensor,
    noise_seeds: torch.Tensor,
    sigma: float,
    initializer: Callable[[int], torch.Tensor],
    num_params: int,
) -> torch.Tensor:
    """``init(s_0) + sigma * eps(s_1)`` per row ``(n, D)``: fresh networks moved apart so
    that their behaviours differ."""
    population = Population(
        bases=InitDraws(init_seeds, initializer, num_params),
        base_index=torch.arange(len(init_seeds)),
        scale=torch.full((len(init_seeds),), float(sigma)),
        seed=noise_seeds,
    )
    return population.materialize(device="cpu")


def iso_line_members(
    parents: torch.Tensor,
    partners: torch.Tensor,
    seeds: torch.Tensor,
    lines: torch.Tensor,
    iso_sigma: float,
    line_sigma: float,
) -> torch.Tensor:
    """Iso+LineDD: ``x_p + iso_sigma eps(s) + line_sigma z (x_q - x_p)`` per row, for
    parents ``x_p``, partners ``x_q`` (both ``(n, D)``), seeds ``s`` and draws ``z``."""
    isotropic = noise_vectors(seeds, parents.shape[1], device="cpu")
    isotropic *= iso_sigma
    along_line = partners - parents
    along_line *= (lines.float() * line_sigma).unsqueeze(1)
    children = parents + isotropic
    children += along_line
    return children


class Lineage:
    """The nodes that an archive's elites are made of (see the module docstring)."""

    def __init__(
        self,
        num_params: int,
        initializer: Callable[[int], torch.Tensor],
        init_sigma: float,
        iso_sigma: float,
        line_sigma: float,
    ) -> None:
        self.num_params = num_params
        self.initializer = initializer
        self.init_sigma = init_sigma
        self.iso_sigma = iso_sigma
        self.line_sigma = line_sigma
        self.nodes: dict[int, tuple] = {}
        """Node id -> ``(kind, a, b, seed, z)``: fresh ``(FRESH, s_0, s_1, 0, 0)``,
        iso_line ``(ISO_LINE, p, q, s, z)``, weights ``(WEIGHTS, 0, 0, 0, 0)``."""
        self.weights: dict[int, torch.Tensor] = {}
        """The weights of WEIGHTS nodes."""
        self.next_id = 0

    def __len__(self) -> int:
        return len(self.nodes)

    def _add(self, recipes: list[tuple]) -> torch.Tensor:
        ids = torch.arange(self.next_id, self.next_id + len(recipes))
        for node, recipe in zip(ids.tolist(), recipes, strict=True):
            self.nodes[node] = recipe
        self.next_id += len(recipes)
        return ids

    def fresh(
        self, init_seeds: torch.Tensor, noise_seeds: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """New fresh nodes: their ids and weights ``(n, D)``."""
        weights = fresh_members(
            init_seeds, noise_seeds, self.init_sigma, self.initializer, self.num_params
        )
        recipes = [
            (FRESH, int(a), int(b), 0, 0.0)
            for a, b in zip(init_seeds.tolist(), noise_seeds.tolist(), strict=True)
        ]
        return self._add(recipes), weights

    def iso_line(
        self,
        parent_ids: torch.Tensor,
        partner_ids: torch.Tensor,
        parents: torch.Tensor,
        partners: torch.Tensor,
        seeds: torch.Tensor,
        lines: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """New Iso+LineDD nodes from nodes ``parent_ids``/``partner_ids`` whose weights are
        ``parents``/``partners``: their ids and weights."""
        weights = iso_line_members(parents, partners, seeds, lines, self.iso_sigma, self.line_sigma)
        recipes = [
            (ISO_LINE, int(p), int(q), int(s), float(z))
            for p, q, s, z in zip(
                parent_ids.tolist(), partner_ids.tolist(), seeds.tolist(),
                lines.float().tolist(), strict=True,
            )
        ]  # fmt: skip
        return self._add(recipes), weights

    def add_weights(self, weights: torch.Tensor) -> torch.Tensor:
        """New nodes that are their weights ``(n, D)`` (no recipe describes them)."""
        ids = self._add([(WEIGHTS, 0, 0, 0, 0.0)] * len(weights))
        for node, row in zip(ids.tolist(), weights, strict=True):
            self.weights[node] = row.detach().float().clone()
        return ids

    def _ancestors(self, ids: list[int]) -> set[int]:
        """``ids`` and every node they were made from."""
        seen: set[int] = set()
        stack = list(ids)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            kind, a, b, _, _ = self.nodes[node]
            if kind == ISO_LINE:
                stack += [a, b]
        return seen

    def keep(self, live: list[int]) -> None:
        """Forget every node that no node of ``live`` (the archive's elites) descends from."""
        needed = self._ancestors(live)
        self.nodes = {node: recipe for node, recipe in self.nodes.items() if node in needed}
        self.weights = {node: row for node, row in self.weights.items() if node in needed}

    def stored_weights(self) -> int:
        """How many weight vectors the lineage holds (its WEIGHTS nodes)."""
        return len(self.weights)

    def rebase(self, weights: torch.Tensor) -> list[int]:
        """Replace every node by WEIGHTS nodes of ``weights`` (the elites'): their new ids,
        in order. For when the recipes would keep more weight vectors than there are
        elites (gradient-made ancestors of Iso+LineDD children)."""
        self.nodes, self.weights = {}, {}
        return self.add_weights(weights).tolist()

    def build(self, ids: list[int]) -> torch.Tensor:
        """The weights ``(len(ids), D)`` of nodes ``ids``, replayed in creation order.

        Nodes are built in batches (a run of consecutive ids whose inputs are all built:
        a generation), and a node's weights are dropped once nothing left needs them."""
        needed = sorted(self._ancestors(list(ids)))
        uses: dict[int, int] = {}
        for node in needed:
            kind, a, b, _, _ = self.nodes[node]
            if kind == ISO_LINE:
                uses[a] = uses.get(a, 0) + 1
                uses[b] = uses.get(b, 0) + 1
        wanted = set(int(node) for node in ids)
        built: dict[int, torch.Tensor] = {}
        start = 0
        while start < len(needed):
            stop = start + 1
            while stop < len(needed) and self._inputs_before(needed[stop], needed[start]):
                stop += 1
            batch = needed[start:stop]
            for node, row in zip(batch, self._build_batch(batch, built), strict=True):
                built[node] = row
            for node in batch:
                kind, a, b, _, _ = self.nodes[node]
                if kind != ISO_LINE:
                    continue
                for used in (a, b):
                    uses[used] -= 1
                    if uses[used] == 0 and used not in wanted:
                        built.pop(used, None)
            start = stop
        if not ids:
            return torch.zeros(0, self.num_params)
        return torch.stack([built[int(node)] for node in ids])

    def _inputs_before(self, node: int, first: int) -> bool:
        """Whether ``node``'s inputs were all made before node ``first``."""
        kind, a, b, _, _ = self.nodes[node]
        return kind != ISO_LINE or (a < first and b < first)

    def _build_batch(self, batch: list[int], built: dict[int, torch.Tensor]) -> list[torch.Tensor]:
        """The weights of ``batch`` (inputs in ``built``), by the functions that made them."""
        rows: dict[int, torch.Tensor] = {}
        by_kind: dict[int, list[int]] = {FRESH: [], ISO_LINE: [], WEIGHTS: []}
        for node in batch:
            by_kind[self.nodes[node][0]].append(node)
        for node in by_kind[WEIGHTS]:
            rows[node] = self.weights[node]
        if by_kind[FRESH]:
            recipes = [self.nodes[node] for node in by_kind[FRESH]]
            made = fresh_members(
                torch.tensor([recipe[1] for recipe in recipes], dtype=torch.int64),
                torch.tensor([recipe[2] for recipe in recipes], dtype=torch.int64),
                self.init_sigma,
                self.initializer,
                self.num_params,
            )
            rows.update(zip(by_kind[FRESH], made, strict=True))
        if by_kind[ISO_LINE]:
            recipes = [self.nodes[node] for node in by_kind[ISO_LINE]]
            made = iso_line_members(
                torch.stack([built[recipe[1]] for recipe in recipes]),
                torch.stack([built[recipe[2]] for recipe in recipes]),
                torch.tensor([recipe[3] for recipe in recipes], dtype=torch.int64),
                torch.tensor([recipe[4] for recipe in recipes], dtype=torch.float32),
                self.iso_sigma,
                self.line_sigma,
            )
            rows.update(zip(by_kind[ISO_LINE], made, strict=True))
        return [rows[node] for node in batch]

    def state_dict(self) -> dict[str, Any]:
        """The nodes as arrays (ids, kinds, the two inputs or init seeds, seeds, draws)
        and the WEIGHTS nodes' weights."""
        ids = sorted(self.nodes)
        recipes = [self.nodes[node] for node in ids]
        return {
            "ids": np.asarray(ids, dtype=np.int64),
            "kinds": np.asarray([recipe[0] for recipe in recipes], dtype=np.int8),
            "inputs": np.asarray([recipe[1:3] for recipe in recipes], dtype=np.int64).reshape(
                -1, 2
            ),
            "seeds": np.asarray([recipe[3] for recipe in recipes], dtype=np.int64),
            "lines": np.asarray([recipe[4] for recipe in recipes], dtype=np.float32),
            "weights": {node: row.clone() for node, row in self.weights.items()},
            "next_id": self.next_id,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.nodes = {
            int(node): (int(kind), int(inputs[0]), int(inputs[1]), int(seed), float(line))
            for node, kind, inputs, seed, line in zip(
                state["ids"], state["kinds"], state["inputs"], state["seeds"], state["lines"],
                strict=True,
            )
        }  # fmt: skip
        self.weights = {int(node): row.clone() for node, row in state["weights"].items()}
        self.next_id = int(state["next_id"])


def for_archive(
    config: Any, num_params: int, initializer: Callable[[int], torch.Tensor]
) -> Lineage:
    """The lineage of an archive algorithm whose ``config`` has ``init_sigma``,
    ``iso_sigma`` and ``line_sigma`` (map_elites', pga_me's)."""
    return Lineage(num_params, initializer, config.init_sigma, config.iso_sigma, config.line_sigma)


def iso_line_offspring(
    lineage: Lineage, archive: Archive, count: int, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` Iso+LineDD children of ``archive``'s elites drawn uniformly (twice: parent
    and partner; each elite's genome is its node): their node ids and weights."""
    occupied = archive.occupied
    elites = archive.params[torch.from_numpy(occupied)]
    ids = torch.as_tensor([archive.genomes[cell] for cell in occupied.tolist()])
    first = torch.from_numpy(rng.integers(0, len(occupied), size=count))
    second = torch.from_numpy(rng.integers(0, len(occupied), size=count))
    seeds = draw_seeds(rng, count)
    lines = torch.from_numpy(rng.standard_normal(count)).float()
    return lineage.iso_line(ids[first], ids[second], elites[first], elites[second], seeds, lines)


def prune(lineage: Lineage, archive: Archive) -> None:
    """Forget the nodes no elite of ``archive`` descends from; where the weight vectors
    left outnumber the elites, rebase onto the elites' weights (each elite its own node)."""
    occupied = archive.occupied.tolist()
    lineage.keep([archive.genomes[cell] for cell in occupied])
    if lineage.stored_weights() > len(occupied):
        _rebase(lineage, archive)


def _rebase(lineage: Lineage, archive: Archive) -> None:
    occupied = archive.occupied.tolist()
    ids = lineage.rebase(archive.params[torch.tensor(occupied, dtype=torch.int64)])
    if archive.genomes is None:
        archive.genomes = [None] * archive.cells
    for cell, node in zip(occupied, ids, strict=True):
        archive.genomes[cell] = node


def load_archive(lineage: Lineage, archive: Archive, state: dict[str, Any]) -> None:
    """Restore an algorithm state's ``archive`` and ``lineage``."""
    lineage.load_state_dict(state["lineage"])
    archive.load_state_dict(state["archive"], lineage.build)
