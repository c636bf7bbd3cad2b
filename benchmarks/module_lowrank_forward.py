"""A factored low-rank population of a module beside one shared model's batched inference.

EGGROLL's claim (Sarkar et al. 2025): a population whose members differ by rank-r products
runs at nearly the speed of one model on the same total batch (91% on an H100). Here, on
this machine: a transformer-width stack of ``nn.Linear`` layers (d_model ``--widths``,
an MLP block of 4 d between, ``--layers`` blocks with LayerNorm) and the transformer of
``net.type=transformer``, three ways at the same total batch (``--members`` x ``--rows``):

- **shared**: the module once on every row (one model's batched inference: the bound);
- **factored**: ``neuroplug_backends.module_lowrank.FactoredModule`` at ``--rank``;
- **materialised**: ``ModuleNetwork.forward_population`` of the members' full weights
  (``torch.func.vmap``), where they fit in ``--max-materialised-gb``.

Each is timed as the median of ``--repeats`` calls after two warm-ups, on ``--threads``
threads; the ratio factored/shared is the claim's number. Writes
``benchmarks/results/module_lowrank_forward.{json,md}`` with the machine. Run it with
nothing else on the machine.

    python benchmarks/module_lowrank_forward.py --widths 256 512 1024 --members 64 --rows 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from machine import describe
from neuroplug_backends.module_lowrank import FactoredModule
from torch import nn

from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.transformer import TransformerNetwork
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population

RESULTS = Path(__file__).resolve().parent / "results"


class LinearStack(nn.Module):
    """``layers`` blocks of LayerNorm, d -> 4d -> d (GELU) with a residual, on a vector."""

    def __init__(self, observation_shape, outputs: int, width: int = 256, layers: int = 2):
        super().__init__()
        self.read = nn.Linear(observation_shape[0], width)
        self.blocks = nn.ModuleList(
            nn.ModuleList(
                [nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.Linear(4 * width, width)]
            )
            for _ in range(layers)
        )
        self.out = nn.Linear(width, outputs)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        hidden = self.read(observations)
        for norm, expand, contract in self.blocks:
            hidden = hidden + contract(nn.functional.gelu(expand(norm(hidden))))
        return self.out(hidden)


def one_base_population(
    network, members: int, rank: int, min_size: int, generator: torch.Generator
) -> Population:
    """``members`` members of one base (an ES population's), each its seed's rank-``rank``
    perturbation (scale 0.01) of every matrix of at least ``min_size`` entries."""
    return Population(
        bases=network.initial_params(generator).unsqueeze(0),
        base_index=torch.zeros(members, dtype=torch.int64),
        scale=torch.full((members,), 0.01),
        seed=torch.arange(members),
        lowrank=lowrank_for(network.layout, rank, min_size),
    )


def timed(call, repeats: int) -> float:
    """Median seconds of ``call()`` after two warm-ups."""
    call(), call()
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(
    network: ModuleNetwork, members: int, rows: int, rank: int, repeats: int, cap_gb: float
):
    """Seconds per call of the three ways (None where materialised does not fit)."""
    generator = torch.Generator().manual_seed(0)
    population = one_base_population(network, members, rank, 4096, generator)
    total = members * rows
    index = torch.arange(members).repeat_interleave(rows)
    inputs = network.example_inputs(total, generator)
    base = network.layout.split(population.base_params()[0])
    module = network.module

    @torch.no_grad()
    def shared():
        return torch.func.functional_call(module, base, (inputs,))

    factored = FactoredModule(network, population, torch.device("cpu"))
    result = {
        "params": network.num_params,
        "shared_s": timed(shared, repeats),
        "factored_s": timed(lambda: factored.forward(index, inputs), repeats),
    }
    materialised_gb = total * network.num_params * 4 / 1e9
    if materialised_gb <= cap_gb:
        params = population.materialize(index)

        @torch.no_grad()
        def dense():
            return network.forward_population(params, inputs)

        result["materialised_s"] = timed(dense, repeats)
    result["factored_over_shared"] = result["shared_s"] / result["factored_s"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--rows", type=int, default=4, help="inputs per member")
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--max-materialised-gb", type=float, default=4.0)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    rows = []
    for width in arguments.widths:
        for name, network in (
            (
                "linear stack",
                ModuleNetwork(LinearStack, (16,), 4, {"width": width, "layers": arguments.layers}),
            ),
            (
                "transformer",
                TransformerNetwork(
                    (16,), 4, {"d_model": width, "heads": 4, "layers": arguments.layers}
                ),
            ),
        ):
            found = measure(
                network, arguments.members, arguments.rows, arguments.rank,
                arguments.repeats, arguments.max_materialised_gb,
            )  # fmt: skip
            rows.append({"module": name, "width": width, **found})
            print(json.dumps(rows[-1]), flush=True)
    record = {"machine": describe(), "settings": vars(arguments), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "module_lowrank_forward.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [
        "# A factored low-rank module population beside one shared model",
        "",
        f"Machine: {record['machine']}. {arguments.members} members x {arguments.rows} inputs, "
        f"rank {arguments.rank}, {arguments.threads} threads, median of {arguments.repeats} calls.",
        "",
        "| module | d_model | params | shared ms | factored ms | factored speed / shared | materialised ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        dense = f"{row['materialised_s'] * 1e3:.2f}" if "materialised_s" in row else "does not fit"
        lines.append(
            f"| {row['module']} | {row['width']} | {row['params']:,} | {row['shared_s'] * 1e3:.2f} | "
            f"{row['factored_s'] * 1e3:.2f} | {row['factored_over_shared']:.2f} | {dense} |"
        )
    (RESULTS / "module_lowrank_forward.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
