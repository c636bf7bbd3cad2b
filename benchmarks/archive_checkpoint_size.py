"""How big is a quality-diversity archive's checkpoint, as lineage nodes against weights?

    python benchmarks/archive_checkpoint_size.py                   # 100 + 30 generations
    python benchmarks/archive_checkpoint_size.py --generations 20  # quicker

Runs ``algo=map_elites`` (Iso+LineDD) and ``algo=pga_me`` on HalfCheetah with the quality
diversity benchmark's task (200-step episodes, the final x position over a grid of 50 cells,
`quality_diversity.py`), a 256-256 actor, and reads each run's last checkpoint:

- the bytes of ``torch.save`` of the archive as checkpointed (elites as lineage nodes:
  recipes, plus weights for the PG children pga_me keeps), next to the same archive as
  float32 weights (what it held before), and of the whole algorithm state (pga_me's
  critics, greedy actor and replay buffer included);
- the lineage's nodes and weight vectors against the occupied cells;
- the seconds to load the state into a fresh algorithm (the elites are replayed), and
  whether the replayed best elite is the run's ``best_policy.pt`` bit for bit.

Sizes do not depend on the machine; load times do (and on its load). Writes
``benchmarks/results/archive_checkpoint_size.md``.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from machine import describe

from neuroplug.experiment.typed import Experiment
from neuroplug.training.checkpoint import BEST_POLICY, checkpoint_dir, load_checkpoint, load_data
from neuroplug.training.components import build_components

RESULT = Path(__file__).resolve().parent / "results" / "archive_checkpoint_size.md"

TASK = [
    "env=halfcheetah", "env.max_episode_steps=200", "net.hidden_sizes=[256,256]",
    "algo.behavior=final_position", "algo.cells=[50]", "algo.bounds=[[-5,5]]",
    "run.eval_interval=0", "run.eval_episodes=1", "logger=none",
]  # fmt: skip


def serialised_bytes(payload: object) -> int:
    """The bytes ``torch.save`` writes for ``payload``."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return len(buffer.getvalue())


def measure(algo: str, generations: int, extra: list[str]) -> dict:
    """Run ``algo`` for ``generations`` into a scratch dir; its checkpoint's figures."""
    with tempfile.TemporaryDirectory() as scratch:
        overrides = [f"algo={algo}", *TASK, *extra, f"run.max_generations={generations}"]
        command = [sys.executable, "-m", "neuroplug", *overrides, f"run.output_dir={scratch}"]
        subprocess.run(command, check=True, capture_output=True)
        state = load_checkpoint(Path(scratch))
        best = load_data(checkpoint_dir(Path(scratch)) / BEST_POLICY)["best_member_params"]
        algorithm = build_components(Experiment.from_yaml(state["config"])).algorithm
        started = time.perf_counter()
        algorithm.load_state_dict(state["algorithm"])
        load_seconds = time.perf_counter() - started
    compact = state["algorithm"]
    inner = compact["algorithm"]
    lineage = inner["lineage"]
    return {
        "algo": algo,
        "generations": generations,
        "num_params": algorithm.num_params,
        "cells": len(inner["archive"]["cells"]),
        "nodes": len(lineage["ids"]),
        "weights": len(lineage["weights"]),
        "archive_bytes": serialised_bytes({"archive": inner["archive"], "lineage": lineage}),
        "weights_bytes": serialised_bytes(
            {"archive": algorithm.archive.state_dict(), "best_params": algorithm.best_params}
        ),
        "state_bytes": serialised_bytes(compact),
        "load_seconds": load_seconds,
        "best_is_bit_identical": bool(torch.equal(algorithm.best_params, best.float())),
    }


def report(rows: list[dict]) -> str:
    """The results as markdown."""
    lines = [
        "# Quality-diversity archive checkpoint: lineage nodes against weights",
        "",
        f"{describe()}. `python benchmarks/archive_checkpoint_size.py`: HalfCheetah-v4, "
        "200-step episodes, final x position over 50 grid cells, a 256-256 tanh actor, "
        "64 offspring per generation; pga_me with its defaults otherwise (half Iso+LineDD, "
        "the rest PG children and the greedy actor). Background runs shared the cores: "
        "load times are indicative, sizes exact.",
        "",
        "| algorithm | generations | params | occupied cells | lineage nodes | of them weights "
        "| archive as nodes (bytes) | as weights (bytes) | ratio | whole algorithm state "
        "| load + replay (s) | best elite replayed bit for bit |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['algo']} | {row['generations']} | {row['num_params']:,} | {row['cells']} "
            f"| {row['nodes']} | {row['weights']} | {row['archive_bytes']:,} "
            f"| {row['weights_bytes']:,} | {row['weights_bytes'] / row['archive_bytes']:.1f}x "
            f"| {row['state_bytes']:,} | {row['load_seconds']:.2f} "
            f"| {row['best_is_bit_identical']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=100, help="map_elites' generations")
    parser.add_argument("--pga-generations", type=int, default=30, help="pga_me's generations")
    args = parser.parse_args()
    rows = [
        measure("map_elites", args.generations, ["algo.population_size=64"]),
        measure("pga_me", args.pga_generations, ["algo.population_size=64"]),
    ]
    text = report(rows)
    RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
