"""The settings of this distribution's backend (its config schema), in a module that imports
no torch: the command line checks a value and prints ``--help`` from it alone, named by
the ``neuroplug.backend_configs`` entry point."""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import BackendConfig
from neuroplug.errors import require


@dataclass
class TorchBackendConfig(BackendConfig):
    """Settings of the PyTorch backend."""

    max_materialized_mb: int = 4096
    """Materialise the population once per evaluation if it fits in this many MiB."""
    num_threads: int = 0
    """PyTorch's CPU threads for inference; 0: auto, one per core while the machine is
    otherwise idle and 1 while other processes want the cores, re-checked every generation
    (:class:`neuroplug.devices.TorchThreads`, set by the run)."""
    tile_rows: int = 128
    """Members per fixed tile of the factored low-rank forward
    (:mod:`neuroplug_backends.torch_lowrank`), at most the population. Bigger tiles are
    faster while most members are alive (benchmarks/results/lowrank_inference.md: small
    tiles pay per-call overhead, most on 2 threads), smaller ones compute fewer dead rows
    once most episodes have ended or when a pipelined group holds part of the population.
    Runs differing in it differ in rounding; within a run a member's outputs never depend
    on what else is alive."""

    def __post_init__(self) -> None:
        require(
            self.max_materialized_mb >= 0,
            "backend.max_materialized_mb",
            f"got {self.max_materialized_mb}",
            "an integer >= 0",
        )
        require(
            self.tile_rows >= 1, "backend.tile_rows", f"got {self.tile_rows}", "an integer >= 1"
        )
