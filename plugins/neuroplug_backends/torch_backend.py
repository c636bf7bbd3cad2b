"""``backend=torch``: the whole population's forward pass as batched PyTorch ops.

Members are materialised once per evaluation by
:meth:`neuroplug.population.members.Population.materialize` (``bases[b] + scale * (sigma[b] ⊙
eps(seed))``, fresh init draws built from their seeds) when they fit
``max_materialized_mb``; bigger populations rebuild just the alive members' weights in
each forward call, trading compute for memory. Low-rank MLP and Nature-CNN populations
without a ``sigma`` vector are never materialised: their shared base weights run as one
product per fixed tile of members and each member adds its factors
(:mod:`neuroplug_backends.torch_lowrank`).

``backend.batching`` says how the alive members of a call are computed. In fixed tiles
(:mod:`neuroplug_backends.tiles`; low-rank populations always): a member's outputs are the
same bits whatever else is alive, on any CPU; a tile's weights are a view of its
materialised rows, and only tiles holding an alive member are computed. Or all alive
members in one call: the fastest, and the same bits for the same calls, but a member's
last bits may move with its company where the libraries pick kernels by the batch's shape
(``docs/reproducibility.md``).

With virtual batch norm (``net.vbn``), loading a population computes every member's
reference statistics in one batched forward over the reference batch and folds them into
its weights (:meth:`neuroplug.nets.network.Network.deploy`); members rebuilt at every step
keep their statistics from the load and are folded as they are rebuilt.
"""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.api import Backend
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.network import Network
from neuroplug.population.members import Population
from neuroplug.runtime.devices import resolve_device
from neuroplug_backends.module_lowrank import FactoredModule, factored_module
from neuroplug_backends.tiles import dense_tile_rows, member_flops, place
from neuroplug_backends.torch_backend_config import TorchBackendConfig
from neuroplug_backends.torch_lowrank import LOWRANK_TILE_ROWS, FactoredLowRank, supports

TILED_FLOPS = 1e6
"""``backend.batching=auto`` computes networks of at least this many FLOPs a forward in
tiles on a CPU: there a tile's call overhead is small against its arithmetic (ES on
Breakout, the Nature CNN at 19 MFLOP, kept 0.87 of its frames/s), while a light MLP's
tiles are mostly overhead once few members are alive (ES on Hopper, 0.14 MFLOP, kept 0.45;
``benchmarks/results/batch_invariance.md``)."""

BYTES_PER_CALL = 2**20
"""What one more batched forward call costs on a CPU, as bytes of weights a gather would
copy: a call of a few layers costs about what copying a megabyte does on a core
(``benchmarks/results/design_measurements.md``).
With ``batching=alive``, scattered alive members whose weights are bigger than that run as
views, a call per run of consecutive members; smaller ones are gathered."""


class TorchBackend(Backend):
    """Heterogeneous batched inference with PyTorch (bmm and grouped convolutions)."""

    config_class = TorchBackendConfig

    def __init__(self, config: TorchBackendConfig, network: Network) -> None:
        super().__init__(config, network)
        self._device = resolve_device(config.device)
        self._population: Population | None = None
        self._params: torch.Tensor | None = None
        self._factored: FactoredLowRank | FactoredModule | None = None
        self._statistics: torch.Tensor | None = None
        self._tiled = False
        self._tile_params: list[torch.Tensor] = []
        self._tile_rows = 1
        self._num_tiles = 1
        self._member_flops: float | None = None
        self._compacted = CompactedMembers()

    @property
    def device(self) -> torch.device:
        return self._device

    def _materialized_mb(self, population_size: int) -> float:
        return population_size * self.network.num_params * 4 / 2**20

    def plan(self, population_size: int) -> str:
        size_mb = self._materialized_mb(population_size)
        if size_mb <= self.config.max_materialized_mb:
            return ""
        return (
            f"dense members rebuilt from their seeds at every step ({population_size} x "
            f"{self.network.num_params:,} params = {size_mb:,.0f} MB > "
            f"backend.max_materialized_mb={self.config.max_materialized_mb}; slower: raise it "
            "if memory allows)"
        )

    @property
    def batch_invariant(self) -> bool:
        # A factored module runs its rows as one batch, whatever its size: not invariant.
        if isinstance(self._factored, FactoredModule):
            return False
        return self._factored is not None or self._tiled

    def _flops(self) -> float:
        """One member's forward FLOPs (measured once)."""
        if self._member_flops is None:
            self._member_flops = member_flops(self.network)
        return self._member_flops

    def _runs_tiles(self, population_size: int) -> bool:
        """Whether dense members run in fixed tiles (``backend.batching``). ``auto``: on a
        CPU, for a population of heavy networks; a population of one (a policy evaluated on
        its episodes) runs its rows in one call, where tiles would cost a call per row."""
        if self.config.batching != "auto":
            return self.config.batching == "tiles"
        return self._device.type == "cpu" and population_size > 1 and self._flops() >= TILED_FLOPS

    runs_virtual_batch_norm = True

    def load(self, population: Population) -> None:
        self._population = population.to(self._device)
        self._compacted = CompactedMembers()
        self._factored = None
        self._statistics = None
        self._tile_params = []
        if isinstance(self.network, ModuleNetwork):  # its constants where its forward runs
            self.network.place_constants(self._device)
        lowrank = population.lowrank
        if (
            lowrank is not None
            and lowrank.matrices
            and population.sigma is None
            and supports(self.network)
            and bool((population.scale != 0).any())
        ):
            # Low-rank tensors stay factored (a member reads rank x (rows + cols) numbers of
            # them per step instead of rows x cols), and P x D is never built.
            self._params = None
            tile_rows = min(self.config.tile_rows or LOWRANK_TILE_ROWS, len(population))
            self._factored = FactoredLowRank(
                self.network, self._population, self._device, tile_rows
            )
            return
        if (
            lowrank is not None
            and lowrank.matrices
            and population.sigma is None
            and factored_module(self.network)
            and bool((population.scale != 0).any())
        ):
            # A module's linear layers and embeddings stay factored: the module runs once
            # per base on all its rows, hooks add each row's own low-rank part.
            self._params = None
            self._factored = FactoredModule(self.network, self._population, self._device)
            return
        self._tiled = self._runs_tiles(len(population))
        self._tile_rows = 1
        if self._tiled:
            flops = 0.0 if self.config.tile_rows else self._flops()
            self._tile_rows = dense_tile_rows(len(population), flops, self.config.tile_rows)
        self._num_tiles = max(1, -(-len(population) // self._tile_rows))
        if self._materialized_mb(len(population)) <= self.config.max_materialized_mb:
            params = self.network.deploy(self._population.materialize(device=self._device))
            padding = self._num_tiles * self._tile_rows - len(params)
            if padding > 0:  # zero rows up to whole tiles: the last tile shaped as the others
                params = torch.cat([params, params.new_zeros((padding, params.shape[1]))])
            self._params = params
            # One view per tile, made once: the same tensor every step, so the layout's
            # remembered slot views serve a population that is one tile.
            self._tile_params = list(params.split(self._tile_rows))
        else:
            self._params = None
            if self.network.normalized:
                self._statistics = self._reference_statistics()

    def _reference_statistics(self) -> torch.Tensor:
        """Every member's virtual batch norm statistics, rebuilding the members a chunk at
        a time (the population does not fit materialised)."""
        chunk = max(1, int(self.config.max_materialized_mb / self._materialized_mb(1)))
        found = []
        for start in range(0, len(self._population), chunk):
            members = torch.arange(start, min(start + chunk, len(self._population)))
            params = self._population.materialize(members, device=self._device)
            found.append(self.network.reference_statistics(params))
        return torch.cat(found)

    def _rebuilt(self, members: torch.Tensor) -> torch.Tensor:
        """The deployed weights of ``members`` rebuilt from the population."""
        params = self._population.materialize(members, device=self._device)
        if self._statistics is None:
            return params
        return self.network.fold_statistics(params, self._statistics[members.to(self._device)])

    runs_recurrent_cores = True

    @torch.no_grad()
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        return self._forward(members, observations, None)[0]

    @torch.no_grad()
    def forward_with_state(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self._forward(members, observations, state)

    def _apply(self, params: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor | None):
        """Row j of ``params`` on ``inputs[j]`` (from ``state[j]`` when given): the outputs
        and the new states (None without a state)."""
        if state is None:
            return self.network.forward_population(params, inputs), None
        return self.network.forward_population_with_state(params, inputs, state)

    def _forward(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self._population is None:
            raise RuntimeError("TorchBackend.forward called before load(population)")
        if isinstance(self._factored, FactoredModule):  # a recurrent module's state too
            return self._factored.forward(members, observations, state)
        if self._factored is not None:  # feed-forward networks only (torch_lowrank.supports)
            return self._factored.forward(members, observations), None
        members = members.cpu().to(torch.int64)
        if not self._tiled or len(members) == 0:
            return self._forward_alive(members, observations, state)
        tile_rows = self._tile_rows
        placement = place(members, tile_rows, self._num_tiles)
        inputs = placement.scatter(observations, tile_rows)
        states = placement.scatter(state, tile_rows) if state is not None else None
        outputs, new_states = [], []
        for block, tile in enumerate(placement.tiles):
            output, new_state = self._apply(
                self._tile_weights(tile, placement, block),
                inputs[block],
                states[block] if states is not None else None,
            )
            outputs.append(output)
            new_states.append(new_state)
        gathered = placement.gather(torch.cat(outputs))
        if states is None:
            return gathered, None
        return gathered, placement.gather(torch.cat(new_states))

    def _tile_weights(self, tile: int, placement, block: int) -> torch.Tensor:
        """Tile ``tile``'s ``(T, D)`` weights: a view of its materialised rows, or, rebuilt,
        the members of ``block`` at their rows of a fresh zeroed tile (the others' rows
        are never read for an alive member's outputs)."""
        if self._params is not None:
            return self._tile_params[tile]
        tile_rows = self._tile_rows
        first = tile * tile_rows
        rows = placement.rows
        in_block = (rows >= block * tile_rows) & (rows < (block + 1) * tile_rows)
        places = (rows[in_block] - block * tile_rows).unique()
        weights = torch.zeros((tile_rows, self.network.num_params), device=self._device)
        weights[places.to(self._device)] = self._rebuilt(first + places)
        return weights

    def _forward_alive(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``backend.batching=alive``: the alive members in one call (or one per run of
        consecutive big members, on a CPU)."""
        if len(members) == 0:
            return self._apply(self._rebuilt(members), observations, state)
        # Small index arithmetic in numpy: a few microseconds, against ~5 per torch op.
        index = members.numpy()
        first, last = int(index.min()), int(index.max())
        if first == last:
            # One member on every row (a policy evaluated on many episodes at once): its one
            # parameter vector broadcast to the rows (a stride-0 view, not a copy per row).
            single = self._rebuilt(members[:1])[0] if self._params is None else self._params[first]
            return self._apply(single.expand(len(index), -1), observations, state)
        if self._params is None:
            return self._apply(self._rebuilt(members), observations, state)
        span = last - first + 1
        if span == len(index) and (np.diff(index) == 1).all():
            # A run of consecutive members (everyone, or a pipelined group): a view, no copy
            # (everyone is the parameter matrix itself, whose slot views are remembered).
            params = self._params if span == len(self._params) else self._params[first : last + 1]
            return self._apply(params, observations, state)
        # (Repeats, a member playing two episodes at once, need a row each: gathered.)
        # (Sorted neighbours all differ: cheaper than np.unique's hash.)
        distinct = bool(np.diff(np.sort(index)).all())
        if span <= 2 * len(index) and distinct:
            # Mostly alive: computing the dead members of the run costs fewer bytes than
            # copying the alive members' weights out (a gather reads and writes them all).
            rows = (members - first).to(self._device)
            return self._on_rows(self._params[first : last + 1], rows, observations, state)
        if self._device.type == "cpu" and distinct:
            order = np.argsort(index, kind="stable")
            breaks = np.flatnonzero(np.diff(index[order]) != 1) + 1
            gathered = len(index) * self.network.num_params * self._params.element_size()
            if gathered > (len(breaks) + 1) * BYTES_PER_CALL:
                return self._by_runs(index[order], order, breaks, observations, state)
        if distinct:
            # Scattered alive members (the episodes of a generation ending one by one): run
            # on a compacted copy of their weights, remade only when half of it has died, so
            # a member's weights are copied a few times per evaluation, not once per step.
            block, rows = self._compacted.rows(self._params, index, self._device)
            if block is not None:
                return self._on_rows(block, rows, observations, state)
        return self._apply(self._params[members.to(self._device)], observations, state)

    def _on_rows(
        self,
        block: torch.Tensor,
        rows: torch.Tensor,
        observations: torch.Tensor,
        state: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every row of weights ``block`` run, input ``j`` placed at row ``rows[j]`` (the
        other rows on zeros); the outputs of ``rows``."""
        inputs = observations.new_zeros((len(block), *observations.shape[1:]))
        inputs[rows] = observations
        states = None
        if state is not None:
            states = state.new_zeros((len(block), *state.shape[1:]))
            states[rows] = state
        outputs, new_states = self._apply(block, inputs, states)
        return outputs[rows], (new_states[rows] if new_states is not None else None)

    def _by_runs(
        self,
        ordered: np.ndarray,
        order: np.ndarray,
        breaks: np.ndarray,
        observations: torch.Tensor,
        state: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Members ``ordered`` (``index[order]``, sorted), each run of consecutive ones
        (split at ``breaks``) through a view of its weights: nothing is copied."""
        rows = torch.from_numpy(order).to(self._device)
        inputs = observations[rows]
        states = state[rows] if state is not None else None
        bounds = [0, *breaks.tolist(), len(ordered)]
        outputs, new_states = [], []
        for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
            first = int(ordered[begin])
            output, new_state = self._apply(
                self._params[first : first + end - begin],
                inputs[begin:end],
                states[begin:end] if states is not None else None,
            )
            outputs.append(output)
            new_states.append(new_state)
        inverse = torch.from_numpy(np.argsort(order)).to(self._device)
        if states is None:
            return torch.cat(outputs)[inverse], None
        return torch.cat(outputs)[inverse], torch.cat(new_states)[inverse]


class CompactedMembers:
    """A copy of some members' weights, one row each in member order, kept between forward
    calls: scattered alive members run on it (their rows, and the rows of members of it that
    have died since) instead of being gathered out of the population at every step.

    It is remade from the members asked when one is not in it, or when it holds more than
    twice as many rows as are asked (dead rows are computed for nothing): as members only die
    within an evaluation's episodes, each remake copies at most half the rows of the one
    before, so all of them together copy about twice the weights of the first."""

    def __init__(self) -> None:
        self.members = np.empty(0, dtype=np.int64)
        """The members held, sorted."""
        self.weights: torch.Tensor | None = None

    def rows(
        self, params: torch.Tensor, index: np.ndarray, device: torch.device
    ) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The compacted weights and each of ``index``'s rows in them (distinct members,
        any order); ``(None, _)`` where compaction would not pay: fewer than 2 members."""
        if len(index) < 2:
            return None, torch.empty(0, dtype=torch.int64)
        held = self.members
        places = np.searchsorted(held, index)
        covered = (
            len(held) > 0
            and len(held) <= 2 * len(index)
            and int(places.max()) < len(held)
            and bool((held[places] == index).all())
        )
        if not covered:
            self.members = np.sort(index)
            self.weights = params[torch.from_numpy(self.members).to(params.device)]
            places = np.searchsorted(self.members, index)
        return self.weights, torch.from_numpy(places).to(device)
