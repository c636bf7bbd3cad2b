"""``run.matmul_precision=medium`` against ``highest`` for the off-policy learners: does
learning survive float32 products computed from bfloat16 inputs, and what do they save?

Per learner and seed, one run at each precision on Pendulum-v1 at the learners' defaults
(256-256 networks, batch 256), ``--steps`` env steps with ``--learning-starts`` random ones
first, then 10 evaluation episodes; the table gives each run's evaluation and its learning
seconds (the sum of ``time_learn``). Seeds alternate precision, so a change in the VM's
speed touches both. Run with nothing else on the machine::

    python benchmarks/matmul_precision.py --learners td3 sac --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from machine import describe
from neuroplug_runs import run_neuroplug

RESULTS = Path(__file__).resolve().parent / "results" / "matmul_precision.md"
PRECISIONS = ("highest", "medium")


def run(algo: str, seed: int, precision: str, steps: int, starts: int) -> tuple[float, float]:
    """The final evaluation and the learning seconds of one run."""
    rows = run_neuroplug(
        [
            f"algo={algo}",
            "env=pendulum",
            f"algo.learning_starts={starts}",
            f"algo.segment_steps={steps // 4}",
            f"run.max_frames={steps}",
            f"run.seed={seed}",
            "run.eval_interval=0",
            "run.eval_episodes=10",
            f"run.matmul_precision={precision}",
        ]
    )
    learning = sum(float(row["time_learn"]) for row in rows)
    return float(rows[-1]["eval_return_mean"]), learning


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=["td3", "sac"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows, summary = [], []
    for algo in args.learners:
        results: dict[str, list[tuple[float, float]]] = {p: [] for p in PRECISIONS}
        for index, seed in enumerate(args.seeds):
            order = PRECISIONS if index % 2 == 0 else PRECISIONS[::-1]
            for precision in order:
                result = run(algo, seed, precision, args.steps, args.learning_starts)
                results[precision].append(result)
                rows.append(
                    f"| {algo} | {seed} | {precision} | {result[0]:,.0f} | {result[1]:.1f} |"
                )
                print(rows[-1], flush=True)
        evals = {p: statistics.mean(r[0] for r in results[p]) for p in PRECISIONS}
        seconds = {p: sum(r[1] for r in results[p]) for p in PRECISIONS}
        summary.append(
            f"| {algo} | {evals['highest']:,.0f} | {evals['medium']:,.0f} | "
            f"{seconds['highest'] / seconds['medium']:.2f} |"
        )
    lines = [
        "# run.matmul_precision: medium against highest for the off-policy learners",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}. Pendulum-v1 at "
        f"the learners' defaults (256-256, batch 256), {args.steps:,} env steps, the first "
        f"{args.learning_starts:,} random, seeds {', '.join(map(str, args.seeds))}; the "
        "evaluation is 10 episodes after the last step (random: about -1,200). Learning "
        "seconds: the runs' `time_learn`, summed. `python benchmarks/matmul_precision.py`.",
        "",
        "| learner | mean evaluation, highest | mean evaluation, medium | learning time "
        "highest / medium |",
        "|---|---|---|---|",
        *summary,
        "",
        "| learner | seed | precision | evaluation | learning seconds |",
        "|---|---|---|---|---|",
        *rows,
    ]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
