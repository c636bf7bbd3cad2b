"""A low-rank population's forward beside torcheggroll's and EvoX's, at equal model,
population and rank, on this machine's CPU: member-forwards per second.

Each width runs, one after the other (nothing else on the machine):

- **ours**: ``neuroplug_backends.module_lowrank.FactoredModule`` on the model the peer
  runs (torcheggroll's ``--layers`` residual blocks ``x + Linear(4W, W)(GELU(Linear(W,
  4W)(x)))``; EvoX's plain ``Sequential`` of the same layers), timed as a generation uses
  it: the population loaded (its factors drawn from the members' seeds) and one forward of
  ``--members`` x ``--rows`` inputs; beside it one shared model's forward on the same rows
  (the bound);
- **torcheggroll** and **EvoX** (``VirtualLoRAES``'s low-rank classes), each in its own
  venv (``benchmarks/peers/eggroll_peers.sh``), through ``benchmarks/peers/
  torcheggroll_forward.py`` and ``evox_forward.py``, whose docstrings say what they time.

Every side runs on ``--threads`` threads, the median of ``--repeats`` calls after two
warm-ups. Writes ``benchmarks/results/hyperscale_peers.{json,md}`` with the machine.

    python benchmarks/hyperscale_peers.py --peers ~/.cache/neuroplug-eggroll-peers \\
        --widths 256 512 1024 --members 64 --rows 4 --rank 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import torch
from machine import describe
from module_lowrank_forward import one_base_population, timed
from neuroplug_backends.module_lowrank import FactoredModule
from torch import nn

from neuroplug.nets.module_network import ModuleNetwork

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


class PeerModel(nn.Module):
    """The peers' model on a ``width``-wide input: ``layers`` blocks of ``Linear(W, 4W)``,
    GELU, ``Linear(4W, W)``, with a residual (torcheggroll's) or without (EvoX's)."""

    def __init__(self, observation_shape, outputs: int, layers: int = 2, residual: bool = True):
        super().__init__()
        width = observation_shape[0]
        self.residual = residual
        self.blocks = nn.ModuleList(
            nn.ModuleList([nn.Linear(width, 4 * width), nn.Linear(4 * width, width)])
            for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for up, down in self.blocks:
            out = down(nn.functional.gelu(up(x)))
            x = x + out if self.residual else out
        return x


def ours(width: int, layers: int, residual: bool, members: int, rows: int, rank: int, repeats: int):
    """Seconds of one shared forward, of a loaded population's forward, and of loading and
    forwarding (what a generation pays), and member-forwards per second of the last."""
    network = ModuleNetwork(PeerModel, (width,), width, {"layers": layers, "residual": residual})
    generator = torch.Generator().manual_seed(0)
    population = one_base_population(network, members, rank, 1024, generator)
    index = torch.arange(members).repeat_interleave(rows)
    inputs = torch.randn(members * rows, width, generator=generator)
    base = network.layout.split(population.base_params()[0])

    @torch.no_grad()
    def shared():
        return torch.func.functional_call(network.module, base, (inputs,))

    loaded = FactoredModule(network, population, torch.device("cpu"))

    def generation():
        return FactoredModule(network, population, torch.device("cpu")).forward(index, inputs)

    found = {
        "shared_s": timed(shared, repeats),
        "forward_s": timed(lambda: loaded.forward(index, inputs), repeats),
        "seconds_per_forward": timed(generation, repeats),
    }
    found["member_forwards_per_second"] = members * rows / found["seconds_per_forward"]
    return found


def peer(python: Path, script: str, arguments: list[str]) -> dict:
    """The one JSON line a peer's script prints."""
    done = subprocess.run(
        [str(python), str(HERE / "peers" / script), *arguments],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", type=Path, required=True, help="eggroll_peers.sh's folder")
    parser.add_argument("--widths", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--rank", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    common = [
        "--layers", str(arguments.layers), "--members", str(arguments.members),
        "--rows", str(arguments.rows), "--rank", str(arguments.rank),
        "--repeats", str(arguments.repeats), "--threads", str(arguments.threads),
    ]  # fmt: skip
    rows = []
    for width in arguments.widths:
        for name, script, residual in (
            ("torcheggroll", "torcheggroll_forward.py", True),
            ("evox", "evox_forward.py", False),
        ):
            theirs = peer(
                arguments.peers / name / "bin" / "python", script, ["--width", str(width), *common]
            )
            mine = ours(
                width, arguments.layers, residual, arguments.members, arguments.rows,
                arguments.rank, arguments.repeats,
            )  # fmt: skip
            # The forward alone, the draw left out (a generation draws once and forwards
            # every step): torcheggroll's draw is apart; EvoX draws inside every forward.
            their_forward = theirs["seconds_per_forward"] - theirs.get("seconds_per_draw", 0.0)
            row = {
                "peer": name,
                "version": theirs["version"],
                "width": width,
                "model": theirs["model"],
                "ours": mine,
                "theirs": theirs,
                "ours_over_theirs": mine["member_forwards_per_second"]
                / theirs["member_forwards_per_second"],
                "forward_ours_over_theirs": their_forward / mine["forward_s"],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "settings": {key: str(value) for key, value in vars(arguments).items()},
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hyperscale_peers.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [
        "# A low-rank population's forward beside torcheggroll's and EvoX's",
        "",
        f"{record['date']}, {record['machine']}. {arguments.members} members x "
        f"{arguments.rows} inputs, rank {arguments.rank}, {arguments.layers} blocks, "
        f"{arguments.threads} thread(s) a side, median of {arguments.repeats} calls; every "
        "side draws its population's noise in the timed call (`benchmarks/hyperscale_peers.py`).",
        "",
        "Member-forwards per second with the population's draw in each call (a generation "
        "of one step), and the forward alone (a generation of many steps draws once; EvoX "
        "draws inside every forward, so its two are one).",
        "",
        "| peer | d_model | peer, with the draw | ours | ours / peer | forward alone: ours / peer | ours / one shared model (forward alone) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        mine = row["ours"]
        lines.append(
            f"| {row['peer']} {row['version']} | {row['width']} | "
            f"{row['theirs']['member_forwards_per_second']:,.0f} | "
            f"{mine['member_forwards_per_second']:,.0f} | {row['ours_over_theirs']:.2f}x | "
            f"{row['forward_ours_over_theirs']:.2f}x | {mine['shared_s'] / mine['forward_s']:.2f} |"
        )
    lines += ["", "What each peer's call does and where the sides differ:", ""]
    lines += [f"- {row['peer']}: {row['theirs']['notes']}" for row in rows[:2]]
    (RESULTS / "hyperscale_peers.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
