"""Scattered alive members on a compacted copy of their weights against a gather of their
weights at every step (the torch backend before a64702e), on the episodes of a generation
ending one by one: map_elites on CartPole (1,024 members of a 64-64 MLP, ``max_envs`` 256
and 1,024) and ES on Hopper (256 members of a 256-256 MLP). One thread each, the two
alternated in every round; the generations after the second are timed. Writes
``results/compacted_members.md``.

    python benchmarks/compacted_members.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import tempfile
from pathlib import Path

import torch
from machine import describe
from neuroplug_backends import torch_backend

from neuroplug.app import run_job
from neuroplug.testing.compose import compose

RESULTS = Path(__file__).resolve().parent / "results"
QD = [
    "algo=map_elites", "env=cartpole", "env.max_episode_steps=500", "net.hidden_sizes=[64,64]",
    "algo.behavior=final_obs", "algo.cells=[50,1,1,1]",
    "algo.bounds=[[-2.4,2.4],[-100,100],[-100,100],[-100,100]]", "run.max_generations=5",
    "algo.population_size=1024",
]  # fmt: skip
CASES = {
    "map_elites CartPole, max_envs 256": [*QD, "scheduler.max_envs=256"],
    "map_elites CartPole, max_envs 1024": [*QD, "scheduler.max_envs=1024"],
    "es Hopper, 256 members of 256-256": [
        "algo=es", "env=hopper", "algo.population_size=256", "net.hidden_sizes=[256,256]",
        "run.max_generations=4",
    ],
}  # fmt: skip
COMMON = [
    "run.eval_interval=0", "run.eval_episodes=1", "logger=none", "backend.torch_threads=1",
    "scheduler.env_threads=1",
]  # fmt: skip
COMPACTED = torch_backend.CompactedMembers.rows


def gathered(self, params, index, device):
    """The backend before compaction: never a compacted copy (a gather every step)."""
    return None, torch.empty(0, dtype=torch.int64)


def timed(overrides: list[str], mode: str) -> tuple[float, float, str]:
    """Steps/s and inference seconds of the timed generations, and the last mean return."""
    torch_backend.CompactedMembers.rows = COMPACTED if mode == "compacted" else gathered
    out = Path(tempfile.mkdtemp())
    try:
        run_job(compose([*overrides, *COMMON, f"run.output_dir={out}"]))
        rows = list(csv.DictReader((out / "metrics.csv").open()))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    later = rows[2:]
    seconds = sum(float(row["generation_seconds"]) for row in later)
    steps = float(rows[-1]["env_steps"]) - float(rows[1]["env_steps"])
    inference = sum(float(row["time_inference"]) for row in later)
    return steps / seconds, inference, rows[-1]["return_mean"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    lines = [
        "# Scattered alive members: a compacted copy against a gather per step",
        "",
        f"{describe()}; `python benchmarks/compacted_members.py --rounds {args.rounds}`",
        "",
        "Env steps/s of the generations after the second (median of the rounds, one thread, "
        "the two alternated) and their inference seconds; the last generation's mean return "
        "shows the two compute the same episodes.",
        "",
        "| case | gather: steps/s | compacted: steps/s | ratio | inference s (gather / "
        "compacted) | same returns |",
        "|---|---|---|---|---|---|",
    ]
    for case, overrides in CASES.items():
        runs: dict[str, list] = {"gather": [], "compacted": []}
        for round_ in range(args.rounds):
            order = ("compacted", "gather") if round_ % 2 == 0 else ("gather", "compacted")
            for mode in order:
                runs[mode].append(timed(overrides, mode))
                print(case, mode, runs[mode][-1], flush=True)
        rate = {mode: statistics.median(run[0] for run in found) for mode, found in runs.items()}
        seconds = {mode: statistics.median(run[1] for run in found) for mode, found in runs.items()}
        same = {run[2] for run in runs["gather"]} == {run[2] for run in runs["compacted"]}
        lines.append(
            f"| {case} | {rate['gather']:,.0f} | {rate['compacted']:,.0f} | "
            f"{rate['compacted'] / rate['gather']:.2f}x | {seconds['gather']:.2f} / "
            f"{seconds['compacted']:.2f} | {'yes' if same else 'NO'} |"
        )
    torch_backend.CompactedMembers.rows = COMPACTED
    (RESULTS / "compacted_members.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
