"""How big is the deep GA's checkpoint for an Atari-sized population? (No environments.)

    python benchmarks/ga_checkpoint_size.py                    # the paper's Atari settings
    python benchmarks/ga_checkpoint_size.py --generations 20   # quicker

Builds ``algo=ga`` with the paper's settings (population 1000, truncation 20, sigma 0.002,
10 elite candidates on 30 episodes) around the Nature CNN with VALID padding on 4x84x84
frames and 18 actions (~1.7M parameters), and runs its generations with synthetic fitness
(independent Gaussian draws, so selection is neutral drift; how much ancestry the parents
share sets how much of their chains a resume replays). It prints, and writes to
``benchmarks/results/ga_checkpoint_size.md``:

- the bytes of ``torch.save(algorithm.state_dict())`` after some generations, next to the
  weights the same state would hold as float32 tensors;
- the seconds to load that state into a fresh instance (the parents' weights are replayed
  from their seed chains) and whether the replay is bit-identical to the live cache.

Timings depend on the machine and its load (one torch thread unless ``--threads``); the
sizes do not.
"""

from __future__ import annotations

import argparse
import io
import platform
import time
from pathlib import Path

import numpy as np
import torch
from machine import describe
from neuroplug_algorithms.ga import DeepGA, GAConfig

import neuroplug
from neuroplug.api import EvaluationResult
from neuroplug.evolution.context import algorithm_context
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.training.checkpoint import load_data

RESULT = Path(__file__).resolve().parent / "results" / "ga_checkpoint_size.md"


def synthetic_result(fitness: np.ndarray) -> EvaluationResult:
    """An evaluation in which member i scored ``fitness[i]`` (no environment runs)."""
    returns = fitness.reshape(-1, 1)
    steps = np.ones_like(returns, dtype=np.int64)
    return EvaluationResult(returns, steps, returns.size, returns.size, returns.size)


def serialise(payload: object) -> bytes:
    """``payload`` as ``torch.save`` writes it to a checkpoint file."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def evolve(ga: DeepGA, generations: int, seed: int) -> list[tuple[int, int, int]]:
    """Run ``generations`` with synthetic fitness; (generation, state bytes, genome seeds)."""
    fitness_rng = np.random.default_rng(seed)
    report = {1, 10, generations} | set(range(25, generations, 25))
    sizes = []
    for generation in range(1, generations + 1):
        while ga.generation < generation:  # the main round, then the elite round
            population = ga.ask()
            ga.tell(population, synthetic_result(fitness_rng.normal(size=len(population))))
        if generation in report:
            state = ga.state_dict()
            genome_seeds = sum(len(chain) for chain in state["algorithm"]["parent_chains"])
            sizes.append((generation, len(serialise(state)), genome_seeds))
            print(f"generation {generation:4d}: state {sizes[-1][1]:,} bytes", flush=True)
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generations", type=int, default=100)
    parser.add_argument("--population", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    network = NatureCNN((4, 84, 84), 18, "valid")
    config = GAConfig(population_size=args.population)
    ga = DeepGA(config, algorithm_context(network, args.seed))
    started = time.perf_counter()
    sizes = evolve(ga, args.generations, args.seed)
    evolve_seconds = time.perf_counter() - started

    state = ga.state_dict()
    started = time.perf_counter()
    resumed = DeepGA(config, algorithm_context(network, args.seed + 1))
    resumed.load_state_dict(load_data(io.BytesIO(serialise(state))))
    load_seconds = time.perf_counter() - started
    identical = all(
        torch.equal(mine, theirs)
        for mine, theirs in [
            (resumed.parents, ga.parents),
            (resumed.policy_params(), ga.policy_params()),
            (resumed.best_params, ga.best_params),
        ]
    )
    chains = state["algorithm"]["parent_chains"] + [state["algorithm"]["best_chain"]]
    prefixes = {tuple(chain[:depth]) for chain in chains for depth in range(1, len(chain) + 1)}
    # best_policy.pt holds the deployable weights, so runs can be replayed without the GA.
    with_policy = len(serialise({"algorithm": state, "policy_params": ga.policy_params()}))

    weights = network.num_params * 4
    lines = [
        "# Deep GA checkpoint size (Atari, Nature CNN)",
        "",
        f"`python benchmarks/ga_checkpoint_size.py --generations {args.generations} "
        f"--population {args.population}`",
        "",
        f"- network: {network.describe()}",
        f"- algorithm: population {config.population_size} (elite included), truncation "
        f"{config.truncation}, sigma {config.sigma}, {config.elite_candidates} elite candidates "
        f"on {config.elite_episodes} episodes; synthetic Gaussian fitness (neutral selection)",
        f"- machine: {describe()} (shared with other jobs), "
        f"{torch.get_num_threads()} torch thread(s), {platform.system()} {platform.release()}",
        f"- versions: Python {platform.python_version()}, torch {torch.__version__}, "
        f"numpy {np.__version__}, neuroplug {neuroplug.__version__}",
        "",
        "| generations | `torch.save(algorithm.state_dict())` bytes | seeds in parent genomes |",
        "|---:|---:|---:|",
        *(f"| {g} | {size:,} | {seeds:,} |" for g, size, seeds in sizes),
        "",
        "For comparison, as float32 weights the same information would take "
        f"{config.truncation * weights:,} bytes for the {config.truncation} parents alone and "
        f"{config.population_size * weights:,} bytes for the whole population. The trainer's "
        "`checkpoints/latest.pt` holds this state plus counters; the elite's weights go to "
        f"`checkpoints/best_policy.pt` for replays (state and weights: {with_policy:,} bytes).",
        "",
        f"- {args.generations} generations of bookkeeping without environments: "
        f"{evolve_seconds:.1f} s (drawing generation 0's {config.population_size} fresh "
        "networks, materialising each generation's parents)",
        f"- loading the final state into a fresh instance: {load_seconds:.1f} s, replaying "
        f"{len(prefixes):,} distinct genome prefixes (of {sum(map(len, chains)):,} seeds in "
        f"all); bit-identical to the live parents, elite and best member: {identical}",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text)


if __name__ == "__main__":
    main()
