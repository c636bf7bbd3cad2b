"""EvoX's low-rank virtual population forward on CPU: member-forwards per second.

Run with the Python of EvoX's own venv (``benchmarks/peers/eggroll_peers.sh``). EvoX's
virtual problems take only an ``nn.Sequential`` of ``nn.Linear`` and activations, so the
model is the plain stack ``[Linear(W, 4W), GELU, Linear(4W, W)] x --layers``, no
residual. The ES holds the center and one seed per member; one population forward is the
call its ``step()`` makes, the problem's fitness of every member (forward, then a
per-member cross-entropy over the rows: the only public entry; the loss is a small part):

    problem.evaluate((es.center, es.seeds, sigma))

under ``torch.no_grad()``, every member on the same ``--rows`` inputs (the problem
broadcasts one batch, here a one-batch list as its loader, so no collation is timed). The
median of ``--repeats`` calls after two warm-ups. Prints one JSON line.

``--noise lora`` (default) times the low-rank classes ``VirtualLoRAES(param_shapes,
lora_rank, pop_size, ...)`` and ``VirtualLoRAProblem(model, loader, criterion,
lora_rank)`` from EvoX's modules ``virtual_lora_es`` / ``virtual_lora_problem``: they
ship in the wheel but EvoX 1.4.0 no longer exports them. ``--noise full`` times the
exported names ``evox.algorithms.VirtualLoRAES`` / ``evox.problems.neuroevolution.
VirtualLoRAProblem``, which in 1.4.0 are aliases of ``VirtualES`` / ``VirtualProblem``:
full-rank Gaussian noise, no rank argument (``--rank`` is ignored).

    /path/to/evox-venv/bin/python benchmarks/peers/evox_forward.py \\
        --width 256 --members 64 --rows 4 --rank 1
"""

import argparse
import json
import statistics
import time
from importlib.metadata import version

import torch
from evox.utils import ParamsAndVector
from torch import nn


def virtual_population(
    model: nn.Sequential,
    batch: tuple[torch.Tensor, torch.Tensor],
    members: int,
    rank: int,
    sigma: float,
    noise: str,
):
    """EvoX's virtual ES and problem for ``model``, as a user builds them."""
    criterion = nn.CrossEntropyLoss(reduction="none")
    center = ParamsAndVector(model).to_vector(dict(model.named_parameters())).detach()
    if noise == "lora":
        from evox.algorithms.so.es_variants.virtual_lora_es import VirtualLoRAES
        from evox.problems.neuroevolution.virtual_lora_problem import VirtualLoRAProblem

        problem = VirtualLoRAProblem(model, [batch], criterion, lora_rank=rank)
        es = VirtualLoRAES(
            problem.param_shapes, lora_rank=rank, pop_size=members, center_init=center,
            learning_rate=0.01, noise_stdev=sigma,
        )  # fmt: skip
    else:
        from evox.algorithms import VirtualLoRAES
        from evox.problems.neuroevolution import VirtualLoRAProblem

        problem = VirtualLoRAProblem(model, [batch], criterion)
        es = VirtualLoRAES(
            problem.param_shapes, pop_size=members, center_init=center, learning_rate=0.01,
            noise_stdev=sigma,
        )  # fmt: skip
    return es, problem


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
    parser.add_argument("--noise", choices=("lora", "full"), default="lora")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    torch.manual_seed(0)
    width, members = arguments.width, arguments.members
    layers = []
    for _ in range(arguments.layers):
        layers += [nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)]
    model = nn.Sequential(*layers)
    batch = (torch.randn(arguments.rows, width), torch.randint(0, width, (arguments.rows,)))
    es, problem = virtual_population(
        model, batch, members, arguments.rank, arguments.sigma, arguments.noise
    )
    payload = (es.center, es.seeds, arguments.sigma)
    seconds_each = []
    with torch.no_grad():
        for call in range(arguments.repeats + 2):
            started = time.perf_counter()
            problem.evaluate(payload)
            if call >= 2:  # two warm-ups
                seconds_each.append(time.perf_counter() - started)
    seconds = statistics.median(seconds_each)
    if arguments.noise == "lora":
        notes = (
            "low-rank classes imported from their modules (not exported by evox 1.4.0); noise "
            "sigma * B @ A per weight (no 1/sqrt(rank)), sigma * n per bias, Philox4x32-10 "
            "drawn in PyTorch (no Triton on CPU) inside every forward; members' weights never "
            "materialised: one shared matmul plus per-member bmm through the rank; every "
            "member sees the same rows; the timed call adds a per-member cross-entropy"
        )
    else:
        notes = (
            "exported VirtualLoRAES/VirtualLoRAProblem = VirtualES/VirtualProblem: full-rank "
            "noise, --rank ignored; the CPU fallback hashes (splitmix64) a full (P, out, in) "
            "noise tensor per layer and runs members one by one in a Python loop; every member "
            "sees the same rows; the timed call adds a per-member cross-entropy"
        )
    print(
        json.dumps(
            {
                "peer": "evox",
                "version": version("evox"),
                "width": width,
                "layers": arguments.layers,
                "members": members,
                "rows": arguments.rows,
                "rank": arguments.rank if arguments.noise == "lora" else None,
                "threads": arguments.threads,
                "seconds_per_forward": seconds,
                "member_forwards_per_second": members * arguments.rows / seconds,
                "model": f"Sequential([Linear({width}, {4 * width}), GELU, Linear({4 * width}, {width})] x {arguments.layers}), no residual",
                "notes": notes,
            }
        )
    )


if __name__ == "__main__":
    main()
