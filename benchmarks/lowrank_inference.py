"""Low-rank population inference against one shared network, measured in one run.

For each network it times, at the same batch (one row per member):

- **shared**: one parameter vector's batched forward on the whole batch
  (``network.forward_single``: plain ``addmm`` and ``conv2d``), the speed a population
  could at best reach;
- **low-rank**: the torch backend's forward of a rank-r EGGROLL population
  (:mod:`neuroplug_backends.torch_lowrank`: the shared base product in fixed tiles plus
  every member's factors), for several tile sizes;
- **full rank**: the torch backend's forward of the same population with dense noise
  (per-member ``bmm`` and grouped convolutions), today's path without low rank.

and prints ``shared / population`` (1.0 = a population costs no more than one network).

    python benchmarks/lowrank_inference.py --threads 1 2 --out benchmarks/results/lowrank_inference.md
    python benchmarks/lowrank_inference.py --device cuda --members 4096 --tiles 1024 4096

On a GPU every call is timed to completion (synchronised), with the inputs already there.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from machine import describe
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.nets.network import Network
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population


@dataclass
class Case:
    """A network, a population size and which tensors go low-rank."""

    name: str
    network: Network
    population: int
    min_size: int
    """Tensors with at least this many entries get low-rank perturbations."""


CASES = [
    # HalfCheetah's observation and action sizes with the project's 256-256 MLP.
    Case("MLP 17-256-256-6, every matrix low-rank", MLP(17, [256, 256], 6, "tanh"), 256, 1),
    Case("MLP 17-256-256-6, algo default (>= 65,536)", MLP(17, [256, 256], 6, "tanh"), 256, 65536),
    # Breakout: 4 stacked 84x84 frames, 4 actions.
    Case("Nature CNN, convolutions and fc low-rank", NatureCNN((4, 84, 84), 4), 64, 4096),
]


def _population(case: Case, rank: int, lowrank: bool) -> Population:
    network = case.network
    center = network.initial_params(torch.Generator().manual_seed(0)).unsqueeze(0)
    size = case.population
    scale = torch.full((size,), 0.02)
    scale[1::2] = -0.02  # mirrored pairs, as ES draws them
    return Population(
        center,
        torch.zeros(size, dtype=torch.int64),
        scale,
        torch.arange(size, dtype=torch.int64) // 2,
        lowrank_for(network.layout, rank, case.min_size) if lowrank else None,
    )


def _inputs(case: Case) -> torch.Tensor:
    return case.network.example_inputs(case.population, torch.Generator().manual_seed(1))


def _seconds(call, budget_s: float, device: torch.device) -> float:
    """Median seconds per call over repeats filling about ``budget_s`` (each call waited
    for on a GPU)."""
    if device.type == "cuda":
        asynchronous = call

        def call():
            asynchronous()
            torch.cuda.synchronize(device)

    call()
    start = time.perf_counter()
    call()
    once = time.perf_counter() - start
    repeats = max(5, int(budget_s / max(once, 1e-6)))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def measure(case: Case, rank: int, tiles: list[int], budget_s: float, device: str) -> dict:
    """Seconds per forward of the shared network and of the population variants."""
    network = case.network
    where = torch.device(device)
    inputs = _inputs(case).to(where)
    members = torch.arange(case.population)  # on the host, as the engine passes them
    center = network.initial_params(torch.Generator().manual_seed(0)).to(where)
    with torch.no_grad():
        row = {
            "shared_ms": 1e3
            * _seconds(lambda: network.forward_single(center, inputs), budget_s, where)
        }
        for tile in tiles:
            config = TorchBackendConfig(name="torch", device=device, tile_rows=tile)
            backend = TorchBackend(config, network)
            backend.load(_population(case, rank, lowrank=True))
            row[f"lowrank_tile{tile}_ms"] = 1e3 * _seconds(
                lambda backend=backend: backend.forward(members, inputs), budget_s, where
            )
        backend = TorchBackend(
            TorchBackendConfig(name="torch", device=device, max_materialized_mb=2**40), network
        )
        try:
            backend.load(_population(case, rank, lowrank=False))
            row["full_rank_ms"] = 1e3 * _seconds(
                lambda: backend.forward(members, inputs), budget_s, where
            )
        except torch.cuda.OutOfMemoryError:
            row["full_rank_ms"] = float("nan")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--tiles", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per measurement")
    parser.add_argument("--out", type=Path, help="write a Markdown table here (and .json)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--members", type=int, default=0, help="every case's population")
    args = parser.parse_args()
    if args.members:
        for case in CASES:
            case.population = args.members
    results = {
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "rank": args.rank,
        "device": args.device,
        "rows": [],
    }
    lines = [
        "| network | members | threads | shared ms | "
        + " | ".join(f"low-rank T={t} ms (ratio)" for t in args.tiles)
        + " | full rank ms (ratio) |",
        "|---|---|---|---|" + "---|" * (len(args.tiles) + 1),
    ]
    for threads in args.threads:
        torch.set_num_threads(threads)
        for case in CASES:
            row = measure(case, args.rank, args.tiles, args.budget, args.device)
            row.update(case=case.name, members=case.population, threads=threads)
            results["rows"].append(row)
            shared = row["shared_ms"]
            cells = [
                f"{row[f'lowrank_tile{t}_ms']:.2f} ({shared / row[f'lowrank_tile{t}_ms']:.2f})"
                for t in args.tiles
            ]
            cells.append(f"{row['full_rank_ms']:.2f} ({shared / row['full_rank_ms']:.2f})")
            lines.append(
                f"| {case.name} | {case.population} | {threads} | {shared:.2f} | "
                + " | ".join(cells)
                + " |"
            )
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.out:
        header = (
            f"Machine: {results['machine']}, device {args.device}; Python {results['python']}; torch "
            f"{results['torch']}; rank {args.rank}. Ratio = shared / population "
            "(1.0: the population costs one network's batched forward).\n\n"
        )
        args.out.write_text(header + table + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
