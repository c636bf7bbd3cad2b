"""torcheggroll's low-rank population forward on CPU: member-forwards per second.

Run with the Python of torcheggroll's own venv (``benchmarks/peers/eggroll_peers.sh``).
The model is ``--layers`` residual blocks ``x + Linear(4W, W)(GELU(Linear(W, 4W)(x)))``;
``TorchEggrollES(model, pop_size=P, sigma=.., rank=r)`` holds the population. One
population forward is what its README's vmap recipe does for a generation, timed whole:

    es.prepare_population()  # draws each member's A @ B.T and adds it: P full weights
    stacked = es.get_stacked_params()
    vmap(lambda *p: functional_call(model, dict(zip(stacked, p)), (inputs,)))(*stacked.values())

under ``torch.no_grad()``, every member on the same ``--rows`` inputs (as ``es.step``
broadcasts them). The median of ``--repeats`` calls after two warm-ups; ``seconds_per_draw``
is the ``prepare_population`` part of it. Prints one JSON line.

    /path/to/torcheggroll-venv/bin/python benchmarks/peers/torcheggroll_forward.py \\
        --width 256 --members 64 --rows 4 --rank 1
"""

import argparse
import json
import statistics
import time
from importlib.metadata import version

import torch
from torch import nn
from torch.func import functional_call, vmap
from torcheggroll import TorchEggrollES


class Block(nn.Module):
    """A transformer's MLP block with its residual."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(x)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--rows", type=int, default=4, help="inputs per member")
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--sigma", type=float, default=0.01)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    width, members = arguments.width, arguments.members
    model = nn.Sequential(*(Block(width) for _ in range(arguments.layers)))
    mirrored = members % 2 == 0  # torcheggroll's antithetic sampling needs an even population
    es = TorchEggrollES(
        model, pop_size=members, sigma=arguments.sigma, rank=arguments.rank, antithetic=mirrored
    )
    inputs = torch.randn(arguments.rows, width)

    def population_forward() -> float:
        """One population forward; returns the seconds its draw took."""
        started = time.perf_counter()
        es.prepare_population()
        stacked = es.get_stacked_params()
        drawn = time.perf_counter() - started
        forward = vmap(
            lambda *params: functional_call(
                model, dict(zip(stacked, params, strict=True)), (inputs,)
            ),
            in_dims=tuple(0 for _ in stacked),
        )
        forward(*stacked.values())
        return drawn

    totals, draws = [], []
    with torch.no_grad():
        for call in range(arguments.repeats + 2):
            started = time.perf_counter()
            drawn = population_forward()
            if call >= 2:  # two warm-ups
                totals.append(time.perf_counter() - started)
                draws.append(drawn)
    seconds = statistics.median(totals)
    notes = (
        "noise sigma/sqrt(rank) * A @ B.T per weight, full Gaussian sigma * n per bias, drawn "
        "per member in a Python loop (one torch.Generator each) and added to P full weight "
        "copies (materialised); members run as vmap'd batched matmuls; every member sees the "
        "same rows"
    )
    if mirrored:
        notes += "; antithetic: P/2 draws, the other half negated"
    print(
        json.dumps(
            {
                "peer": "torcheggroll",
                "version": version("torcheggroll"),
                "width": width,
                "layers": arguments.layers,
                "members": members,
                "rows": arguments.rows,
                "rank": arguments.rank,
                "threads": arguments.threads,
                "seconds_per_forward": seconds,
                "member_forwards_per_second": members * arguments.rows / seconds,
                "seconds_per_draw": statistics.median(draws),
                "model": f"{arguments.layers} x residual [Linear({width}, {4 * width}), GELU, Linear({4 * width}, {width})]",
                "notes": notes,
            }
        )
    )


if __name__ == "__main__":
    main()
