"""The learner's update on a Doom-sized minibatch in float32 and with a bfloat16 encoder.

    python benchmarks/encoder_precision.py                 # 1024 transitions, 5 pairs
    python benchmarks/encoder_precision.py --core none     # the feed-forward Nature CNN
    python benchmarks/encoder_precision.py --task Breakout-v5 --core none --population 64

One update step of ``algo=appo env=doom_basic net.core=gru`` as the learner thread runs
it: the Nature CNN over 32 chunks of 32 steps of 84x84x4 frames, the GRU of 512 re-run
over each chunk, the heads, and the backward pass (``algo.encoder_precision``:
``float32`` or ``bfloat16`` under autocast). The two settings alternate, a pair at a
time, after a warm-up each, so a change in the machine's load falls on both; the script
prints each one's median seconds and their ratio, and whether this CPU has native
bfloat16. ``--task`` takes another task's frames (``Breakout-v5``: the Atari preset's
4x84x84). ``--population P`` also times the population forward an evolution run makes
(P members, one frame each, the torch backend's layer-table forward) with the members'
weights and frames in float32 and in bfloat16. ``--out`` appends the figures, with the
machine, to a Markdown file. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from machine import describe

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.rl import ActorCritic
from neuroplug.runtime.devices import has_native_bfloat16
from neuroplug.training.components import build_env_and_network


def _update_seconds(model: ActorCritic, frames, states, starts) -> float:
    started = time.perf_counter()
    model.zero_grad()
    if model.recurrent:
        outputs, values, _ = model.sequence(frames, states, starts)
    else:
        outputs, values = model(frames.reshape(-1, *frames.shape[2:]))
    (outputs.square().mean() + values.square().mean()).backward()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--core", default="gru", choices=("gru", "lstm", "none"))
    parser.add_argument("--steps", type=int, default=32, help="steps per chunk")
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--task", default="D1Basic-v1", help="whose frames and actions")
    parser.add_argument("--population", type=int, default=0, help="also time P members")
    parser.add_argument("--out", type=Path, help="append the figures to this .md file")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    env, network = build_env_and_network(
        EnvConfig(task_id=arguments.task), NetConfig(type="nature_cnn", core=arguments.core)
    )
    model = ActorCritic(network, env, network.initial_params(torch.Generator().manual_seed(0)), 0)
    model.train()
    generator = torch.Generator().manual_seed(1)
    shape = (arguments.steps, arguments.chunks, *env.obs_shape)
    frames = torch.randint(0, 256, shape, dtype=torch.uint8, generator=generator)
    states = torch.zeros(arguments.chunks, network.state_size)
    starts = torch.zeros(arguments.steps, arguments.chunks, dtype=torch.bool)
    seconds: dict[str, list[float]] = {"float32": [], "bfloat16": []}
    for precision in seconds:  # warm-up: oneDNN builds its kernels on first use
        model.train_encoder_in(precision)
        _update_seconds(model, frames, states, starts)
    for _ in range(arguments.pairs):
        for precision, times in seconds.items():
            model.train_encoder_in(precision)
            times.append(_update_seconds(model, frames, states, starts))
    medians = {precision: statistics.median(times) for precision, times in seconds.items()}
    print(
        f"{network.describe()}, {arguments.steps * arguments.chunks} transitions, "
        f"{arguments.threads} threads, native bfloat16: {has_native_bfloat16(torch.device('cpu'))}"
    )
    for precision, times in seconds.items():
        print(
            f"{precision:>8}: median {medians[precision]:.3f} s  ({', '.join(f'{t:.3f}' for t in times)})"
        )
    print(f"bfloat16 / float32: {medians['bfloat16'] / medians['float32']:.2f}")
    lines = [
        f"- {arguments.task}, {network.describe()}, update of "
        f"{arguments.steps * arguments.chunks} transitions, {arguments.threads} threads: "
        f"float32 {medians['float32']:.3f} s, bfloat16 {medians['bfloat16']:.3f} s "
        f"({medians['bfloat16'] / medians['float32']:.2f})"
    ]
    if arguments.population:
        forward = _population_forward(network, arguments.population, arguments.pairs)
        print(f"population forward, {arguments.population} members: {forward}")
        lines.append(
            f"- {arguments.task}, population forward of {arguments.population} members, one "
            f"frame each: float32 {forward['float32'] * 1e3:.1f} ms, bfloat16 "
            f"{forward['bfloat16'] * 1e3:.1f} ms "
            f"({forward['bfloat16'] / forward['float32']:.2f})"
        )
    if arguments.out:
        with arguments.out.open("a") as out:
            out.write(f"\n{time.strftime('%Y-%m-%d')}, {describe()}:\n\n")
            out.write("\n".join(lines) + "\n")


def _population_forward(network, size: int, pairs: int) -> dict[str, float]:
    """Median seconds of one population forward in float32 and in bfloat16, alternating."""
    generator = torch.Generator().manual_seed(2)
    params = torch.stack([network.initial_params(generator) for _ in range(size)])
    frames = network.example_inputs(size, generator)
    weights = {"float32": params, "bfloat16": params.to(torch.bfloat16)}
    seconds: dict[str, list[float]] = {name: [] for name in weights}
    with torch.no_grad():
        for members in weights.values():  # warm-up
            network.forward_population(members, frames)
        for _ in range(pairs):
            for name, members in weights.items():
                started = time.perf_counter()
                network.forward_population(members, frames)
                seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(times) for name, times in seconds.items()}


if __name__ == "__main__":
    main()
