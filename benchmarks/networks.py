"""A module network (``net.type=module``: ``torch.func`` over members) against the layer
table (the ``mlp`` and ``nature_cnn`` fast path), measured side by side in one run.

For the same architecture written both ways (a 64-64 tanh MLP on CartPole's 4 numbers, the
Nature CNN on 4x84x84 frames), it times the torch backend's forward of a dense population
(one observation per member), as the evaluation engine calls it, with every member alive
and with 30% alive, and prints ``layer table / module`` (1.0: the module path is as fast);
then a learner's update (forward, backward of a random loss gradient, an Adam step on a
minibatch: the MLP's actor and separate critic, the Nature CNN's shared trunk with its
module written as an encoder, ``net.features=512``) the same way; then the IMPALA ResNet's
population forward (``net.type=impala``) beside the Nature CNN's, per frame.

    python benchmarks/networks.py --out benchmarks/results/networks.md
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import torch
from machine import describe
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig
from torch import nn

from neuroplug.nets.impala import ImpalaResNet
from neuroplug.nets.mlp import MLP
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.nets.network import Network
from neuroplug.population.members import Population
from neuroplug.rl.actor_critic import ActorCritic, OutputGradients


class MLPModule(nn.Module):
    """The layer table's 64-64 tanh MLP, as a module."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(observation_shape[0], 64),
            nn.Tanh(),
            nn.Linear(64, 64),
            nn.Tanh(),
            nn.Linear(64, outputs),
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.layers(observations)


class NatureCNNModule(nn.Module):
    """The Nature CNN (VALID padding), as a module."""

    def __init__(self, observation_shape, outputs: int) -> None:
        super().__init__()
        channels = observation_shape[0]
        self.layers = nn.Sequential(
            nn.Conv2d(channels, 32, 8, 4),
            nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, 1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(3136, 512),
            nn.ReLU(),
            nn.Linear(512, outputs),
        )

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.layers(observations)


class NatureCNNEncoder(nn.Module):
    """The Nature CNN up to its 512 rectified features, as a module encoder."""

    def __init__(self, observation_shape, features: int) -> None:
        super().__init__()
        assert features == 512, "the Nature CNN's features are 512"
        self.layers = NatureCNNModule(observation_shape, 1).layers[:-1]

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.layers(observations)


def _update_seconds(network: Network, batch: int, repeats: int) -> float:
    """Median seconds of one learner update of an actor-critic on ``batch`` observations:
    forward, backward of a random loss gradient, an Adam step."""
    generator = torch.Generator().manual_seed(0)
    env = SimpleNamespace(discrete=True, num_actions=network.output_size)
    model = ActorCritic(network, env, network.initial_params(generator), seed=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    inputs = network.example_inputs(batch, generator)
    grads = OutputGradients(
        torch.randn(batch, network.output_size, generator=generator) / batch,
        torch.randn(batch, generator=generator) / batch,
        None,
    )

    def update() -> None:
        optimizer.zero_grad(set_to_none=False)
        _, _, backward = model.forward_for_gradients(inputs)
        backward(grads)
        optimizer.step()

    update()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        update()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _seconds(network: Network, members: int, alive: float, repeats: int) -> float:
    """Median seconds of one backend forward of ``alive`` of ``members`` dense members."""
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(members)])
    backend = TorchBackend(TorchBackendConfig(name="torch"), network)
    backend.load(Population.dense(params))
    rows = torch.randperm(members, generator=generator)[: max(1, round(alive * members))]
    inputs = network.example_inputs(len(rows), generator)
    backend.forward(rows, inputs)  # warm-up: views, allocator, kernels
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        backend.forward(rows, inputs)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cases = [
        ("64-64 MLP, CartPole", MLP(4, [64, 64], 2, "tanh"), ModuleNetwork(MLPModule, (4,), 2)),
        (
            "64-64 MLP, CartPole, functional_call under vmap",
            MLP(4, [64, 64], 2, "tanh"),
            ModuleNetwork(MLPModule, (4,), 2, lower_chains=False),
        ),
        (
            "Nature CNN, 4x84x84",
            NatureCNN((4, 84, 84), 6),
            ModuleNetwork(NatureCNNModule, (4, 84, 84), 6),
        ),
    ]
    lines = [
        "# Module networks against the layer table: the torch backend's population forward",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; median of {args.repeats} calls, one observation "
        "per member. `python benchmarks/networks.py`.",
        "",
        "| network | members | alive | layer table (ms) | module (ms) | layer table / module |",
        "|---|---|---|---|---|---|",
    ]
    for label, table, module in cases:
        assert table.num_params == module.num_params, label
        for members in args.members:
            repeats = args.repeats if "MLP" in label else max(3, args.repeats // 4)
            for alive in (1.0, 0.3):
                fast = _seconds(table, members, alive, repeats)
                general = _seconds(module, members, alive, repeats)
                line = (
                    f"| {label} | {members} | {alive:.0%} | {fast * 1e3:.2f} | "
                    f"{general * 1e3:.2f} | {fast / general:.2f} |"
                )
                print(line, flush=True)
                lines.append(line)
    lines += [
        "",
        "| a learner's update | minibatch | layer table (ms) | module (ms) | "
        "layer table / module |",
        "|---|---|---|---|---|",
    ]
    updates = [
        ("64-64 MLP actor and critic, CartPole", cases[0][1], cases[0][2], 128),
        (
            "64-64 MLP actor and critic, CartPole, functional_call",
            cases[1][1],
            cases[1][2],
            128,
        ),
        (
            "Nature CNN with value head, 4x84x84",
            cases[2][1],
            ModuleNetwork(NatureCNNEncoder, (4, 84, 84), 6, features=512),
            256,
        ),
    ]
    for label, table, module, batch in updates:
        assert table.num_params == module.num_params, label
        repeats = args.repeats if "MLP" in label else max(3, args.repeats // 4)
        fast = _update_seconds(table, batch, repeats)
        general = _update_seconds(module, batch, repeats)
        line = (
            f"| {label} | {batch} | {fast * 1e3:.2f} | {general * 1e3:.2f} | {fast / general:.2f} |"
        )
        print(line, flush=True)
        lines.append(line)
    lines += [
        "",
        "| IMPALA ResNet against the Nature CNN (layer table) | members | alive | Nature CNN (ms) "
        "| IMPALA (ms) | IMPALA / Nature CNN per frame |",
        "|---|---|---|---|---|---|",
    ]
    nature = NatureCNN((4, 84, 84), 6)
    impala = ImpalaResNet((4, 84, 84), 6)
    for members in args.members:
        repeats = max(3, args.repeats // 4)
        base = _seconds(nature, members, 1.0, repeats)
        resnet = _seconds(impala, members, 1.0, repeats)
        line = (
            f"| {impala.describe()} | {members} | 100% | {base * 1e3:.2f} | "
            f"{resnet * 1e3:.2f} | {resnet / base:.2f} |"
        )
        print(line, flush=True)
        lines.append(line)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
