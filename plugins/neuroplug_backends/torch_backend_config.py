"""The settings of ``backend=torch``: its config schema, beside
:mod:`neuroplug_backends.torch_backend`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.backend_configs`` entry point ``torch``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import BackendConfig
from neuroplug.errors import require

BATCHINGS = ("auto", "tiles", "alive")
"""The values of ``backend.batching``."""


@dataclass
class TorchBackendConfig(BackendConfig):
    """Settings of the PyTorch backend: a population's batched heterogeneous inference
    (``bmm`` and grouped convolutions)."""

    max_materialized_mb: int = 4096
    """Materialise the population once per evaluation if it fits in this many MiB."""
    torch_threads: int = 0
    """PyTorch's CPU threads for inference; 0: auto, one per core while the machine is
    otherwise idle and 1 while other processes want the cores, re-checked every generation
    (:class:`neuroplug.runtime.devices.TorchThreads`, set by the run)."""
    batching: str = "auto"
    """How the alive members of a forward call are computed. ``tiles``: in fixed tiles of
    members (:mod:`neuroplug_backends.tiles`), so a member's outputs are the same bits
    whatever else is alive, on any CPU, and every scheduler gives the same results;
    computing a tile's dead members costs frames/s once few are alive. ``alive``: the
    alive members in one batched call, the fastest; the same bits for the same schedule
    (a resume, Ray's worker counts), but across schedulers only where the CPU's libraries
    ignore the batch's shape (``docs/reproducibility.md`` says where; elsewhere they agree
    to rounding). ``auto``: ``tiles`` on a CPU for populations of networks of at least 1
    MFLOP a forward (convolutional encoders, which keep most of their frames/s in tiles);
    ``alive`` for lighter ones (which lose more than half;
    ``benchmarks/results/batch_invariance.md``), for a
    population of one (a policy evaluated on its episodes, where tiles cost a call per
    episode) and on a GPU (``benchmarks/results/batch_invariance.md``,
    ``docs/reproducibility.md``). Low-rank populations always run in tiles."""
    tile_rows: int = 0
    """Members per fixed tile on a CPU (:mod:`neuroplug_backends.tiles`). 0: auto, 128
    for the factored low-rank forward, and about 32 MFLOP of forward per tile for
    materialised members (2 Nature CNNs, up to 226 256-256 MLPs), at most the population.
    Bigger tiles pay less per-call overhead while most members are alive, smaller ones
    compute fewer dead rows once episodes end (``benchmarks/results/batch_invariance.md``,
    ``benchmarks/results/lowrank_inference.md``). Runs differing in it differ in rounding;
    within a run a member's outputs never depend on its company."""

    def check(self) -> None:
        super().check()
        require(
            self.batching in BATCHINGS,
            "backend.batching",
            f"got {self.batching!r}",
            ", ".join(BATCHINGS),
        )
        require(
            self.max_materialized_mb >= 0,
            "backend.max_materialized_mb",
            f"got {self.max_materialized_mb}",
            "an integer >= 0",
        )
        require(
            self.tile_rows >= 0,
            "backend.tile_rows",
            f"got {self.tile_rows}",
            "an integer >= 1, or 0 for auto",
        )
