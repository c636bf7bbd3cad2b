"""Heterogeneous population inference: PyTorch (bmm / grouped conv) vs each Triton mode.

    python benchmarks/triton_inference.py                     # on a CUDA GPU (an H100)
    python benchmarks/triton_inference.py --nets mlp --mlp-populations 1024 4096
    TRITON_INTERPRET=1 python benchmarks/triton_inference.py --interpret --tiny  # smoke test

For each network and population size it times one population step (every alive member's
forward pass on its own observation) for:

- ``torch``: ``backend=torch`` with the members materialised once (its fastest path);
- ``triton noise``: weights rebuilt in-kernel from one base and the seeds;
- ``triton dense fp32`` / ``triton dense bf16``: one stored weight vector per member;
- ``triton lowrank``: an ES population with rank-``--rank`` EGGROLL perturbations on the
  large matrices (``algo.perturbation=lowrank``);
- ``shared``: PyTorch inference of one network on the same batch (all members equal),
  the throughput heterogeneous inference is measured against.

Next to each time it prints the fraction of the memory-bandwidth floor — alive members x
weight bytes (float32; bfloat16 for the bf16 row) / the copy bandwidth measured here — and
the throughput relative to ``shared``. On a GPU it writes
``benchmarks/results/triton_inference.md`` (``--output`` to change). It needs a GPU: without
one it says so and exits with status 2, unless ``--interpret`` runs the kernels on Triton's
CPU interpreter (``TRITON_INTERPRET=1`` must be set; tiny shapes only, times meaningless,
nothing written) to prove the script itself works.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

RESULT = Path(__file__).resolve().parent / "results" / "triton_inference.md"


@dataclass
class Row:
    """One timed configuration."""

    net: str
    population: int
    alive: int
    mode: str
    seconds: float
    floor_seconds: float
    shared_seconds: float
    difference: float
    """Largest absolute difference from the torch backend's outputs (low-rank members
    differ from the others by design)."""

    def cells(self) -> list[str]:
        """The table cells of this row."""
        return [
            self.net,
            f"{self.population:,}",
            f"{self.alive:,}",
            self.mode,
            f"{self.seconds * 1e3:.3f}",
            f"{self.alive / self.seconds:,.0f}",
            f"{self.floor_seconds / self.seconds:.2f}",
            f"{self.shared_seconds / self.seconds:.2f}",
            f"{self.difference:.1e}",
        ]


HEADER = [
    "net",
    "population",
    "alive",
    "mode",
    "ms / step",
    "members / s",
    "floor fraction",
    "vs shared",
    "max diff vs torch",
]


def timed(step: Callable[[], object], device: torch.device, repeats: int) -> float:
    """Median seconds of ``step`` after a warm-up call (CUDA events on a GPU)."""
    step()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            stop.record()
            stop.synchronize()
            samples.append(start.elapsed_time(stop) / 1e3)
        else:
            began = time.perf_counter()
            step()
            samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def copy_bandwidth(device: torch.device, megabytes: int, repeats: int) -> float:
    """Bytes per second of a device-to-device copy (read + write counted)."""
    source = torch.empty(megabytes * 2**20 // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    seconds = timed(lambda: target.copy_(source), device, repeats)
    return 2 * source.numel() * 4 / seconds


def population(network, size: int, lowrank=None):
    """An ES-shaped population: one base, mirrored +/- sigma, distinct seeds."""
    from neuroplug.population.members import Population

    base = network.initial_params(torch.Generator().manual_seed(0))
    return Population(
        bases=base.unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=torch.tensor([0.02, -0.02]).repeat((size + 1) // 2)[:size],
        seed=torch.arange(size, dtype=torch.int64).div(2, rounding_mode="floor") + 1,
        lowrank=lowrank,
    )


def shared_forward(network, params: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """Batched inference of one network (the weights in ``params``) with PyTorch's kernels."""
    return lambda x: network.forward_single(params, x)


@torch.no_grad()
def measure(name, network, sizes, alive_fraction, lowrank, device, bandwidth, repeats) -> list[Row]:
    """Time every mode for each population size of one network."""
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig
    from neuroplug_triton.backend import TritonBackend, TritonBackendConfig

    rows: list[Row] = []
    weight_bytes = network.num_params * 4
    for size in sizes:
        alive = max(1, round(size * alive_fraction))
        # On the host, as the engine passes them (the backends copy them over themselves).
        members = torch.randperm(size)[:alive].sort().values
        shape = (alive, *network.input_shape)
        if len(network.input_shape) == 3:
            observations = torch.randint(0, 256, shape, dtype=torch.uint8, device=device)
        else:
            observations = torch.randn(shape, device=device)
        plain = population(network, size)
        lowranked = population(network, size, lowrank)
        shared = shared_forward(network, plain.bases[0].to(device))
        shared_seconds = timed(partial(shared, observations), device, repeats)
        floor32 = alive * weight_bytes / bandwidth
        where = str(device)
        # Backends are built one at a time: materialised populations of the big sizes do
        # not fit in GPU memory side by side.
        modes = [
            ("torch", TorchBackend, TorchBackendConfig(device=where, max_materialized_mb=2**40), plain, floor32),
            ("triton noise", TritonBackend, TritonBackendConfig(device=where, mode="noise"), plain, floor32),
            ("triton dense fp32", TritonBackend, TritonBackendConfig(device=where, mode="dense"), plain, floor32),
            ("triton dense bf16", TritonBackend, TritonBackendConfig(device=where, mode="dense", dense_dtype="bfloat16"), plain, floor32 / 2),
            ("torch lowrank", TorchBackend, TorchBackendConfig(device=where), lowranked, floor32),
            ("triton lowrank", TritonBackend, TritonBackendConfig(device=where, mode="noise"), lowranked, floor32),
        ]  # fmt: skip
        # Each population's first (torch) outputs, to check each mode computes the same
        # members (the low-rank rows against the torch backend's factored low-rank path).
        references: dict[int, torch.Tensor] = {}
        for mode, backend_class, config, members_of, floor in modes:
            try:
                backend = backend_class(config, network)
                backend.load(members_of)
                outputs = backend.forward(members, observations).float()
                seconds = timed(partial(backend.forward, members, observations), device, repeats)
            except torch.cuda.OutOfMemoryError:
                print(f"{name}  {size:,}  {mode}: out of GPU memory, skipped", flush=True)
                continue
            finally:
                backend = None
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            reference = references.setdefault(id(members_of), outputs)
            difference = float((outputs - reference).abs().max())
            rows.append(Row(name, size, alive, mode, seconds, floor, shared_seconds, difference))
            print("  ".join(rows[-1].cells()), flush=True)
    return rows


def markdown(rows: list[Row], header_lines: list[str]) -> str:
    """The results file: how it was run, on what, and the table."""
    lines = ["# Triton population inference", "", *header_lines, ""]
    lines.append("| " + " | ".join(HEADER) + " |")
    lines.append("|" + "---|" * 4 + "---:|" * 5)
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nets", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    parser.add_argument("--mlp-populations", nargs="+", type=int, default=[1024, 4096, 16384])
    parser.add_argument("--cnn-populations", nargs="+", type=int, default=[64, 256, 1024, 4096])
    parser.add_argument("--alive", type=float, default=1.0, help="fraction of members alive")
    parser.add_argument("--rank", type=int, default=4, help="rank of the low-rank mode")
    parser.add_argument(
        "--lowrank-min-size", type=int, default=65536, help="smallest low-rank matrix"
    )
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--interpret", action="store_true", help="CPU interpreter smoke test")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes (for --interpret)")
    parser.add_argument("--output", type=Path, default=RESULT)
    args = parser.parse_args()

    if args.interpret:
        if os.environ.get("TRITON_INTERPRET") != "1":
            print("--interpret needs TRITON_INTERPRET=1 set before start-up", file=sys.stderr)
            return 2
        device = torch.device("cpu")
    elif not torch.cuda.is_available():
        print(
            "No CUDA GPU is visible: this benchmark measures GPU kernels and has nothing to "
            "measure here. Run it on a GPU machine (e.g. an H100), or use "
            "'TRITON_INTERPRET=1 python benchmarks/triton_inference.py --interpret --tiny' "
            "to check that the script runs.",
            file=sys.stderr,
        )
        return 2
    else:
        device = torch.device("cuda")

    import triton

    from neuroplug.nets.mlp import MLP
    from neuroplug.nets.nature_cnn import NatureCNN
    from neuroplug.population.lowrank import lowrank_for

    if args.tiny:
        mlp, cnn = MLP(8, [16, 16], 4, "tanh"), NatureCNN((1, 36, 36), 4)
        mlp_sizes, cnn_sizes, repeats, megabytes = [4], [2], 1, 16
        args.lowrank_min_size = 16
    else:
        # OpenAI ES's Humanoid policy (376 observations, 17 actions, 256-256 tanh) and the
        # deep GA's Atari network (4 stacked 84x84 frames, 18 actions, VALID padding).
        mlp, cnn = MLP(376, [256, 256], 17, "tanh"), NatureCNN((4, 84, 84), 18)
        mlp_sizes, cnn_sizes = args.mlp_populations, args.cnn_populations
        repeats, megabytes = args.repeats, 1024
    bandwidth = copy_bandwidth(device, megabytes, repeats)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    header = [
        "`" + " ".join(["python", "benchmarks/triton_inference.py", *sys.argv[1:]]) + "`",
        "",
        f"- device: {name or 'CPU'}; measured copy bandwidth {bandwidth / 1e9:,.0f} GB/s",
        f"- versions: Python {platform.python_version()}, torch {torch.__version__}, "
        f"triton {triton.__version__}, CUDA {torch.version.cuda}",
        f"- MLP: {mlp.describe()}; Nature CNN: {cnn.describe()}",
        f"- alive fraction {args.alive}; low-rank: rank {args.rank} on matrices of at least "
        f"{args.lowrank_min_size} entries; median of {repeats} steps",
        "- floor fraction = (alive x weight bytes / copy bandwidth) / time; weight bytes are"
        " float32 except for the bf16 row. vs shared = time of one shared network on the"
        " same batch / time.",
    ]
    print("\n".join(header))
    print("  ".join(HEADER))
    rows: list[Row] = []
    for net, network, sizes in (("mlp", mlp, mlp_sizes), ("cnn", cnn, cnn_sizes)):
        if net in args.nets:
            lowrank = lowrank_for(network.layout, args.rank, args.lowrank_min_size)
            rows += measure(net, network, sizes, args.alive, lowrank, device, bandwidth, repeats)
    if device.type == "cuda":
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(markdown(rows, header))
        print(f"wrote {args.output}")
    else:
        print("interpreter smoke test: times are meaningless, nothing written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
