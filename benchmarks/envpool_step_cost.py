"""What one env step costs in EnvPool itself: ``send`` + ``recv`` of a bare pool, no policy.

    python benchmarks/envpool_step_cost.py [--task CartPole-v1 --steps 2000]

For a simulator that costs next to nothing (CartPole), this is the floor of any engine
built on EnvPool: the per-env work of its queues and buffers. Each row steps a pool of
``envs`` slots on ``threads`` worker threads, all slots or a random 70% of them a step (as
the evaluation engine sends only the lanes still playing), and reports microseconds per
env step. Writes ``results/envpool_step_cost.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import envpool
import numpy as np
from machine import describe

RESULTS = Path(__file__).resolve().parent / "results"
SHAPES = ((64, 1), (256, 1), (256, 2), (1024, 1), (1024, 2))
FRACTIONS = (1.0, 0.7)


def step_cost(task: str, envs: int, threads: int, fraction: float, steps: int) -> float:
    """Seconds per env step of ``steps`` send/recv rounds over ``fraction`` of the slots."""
    pool = envpool.make(
        task, env_type="gymnasium", num_envs=envs, batch_size=envs, num_threads=threads, seed=0
    )
    pool.async_reset()
    pool.recv()
    rng = np.random.default_rng(0)
    count = max(1, int(envs * fraction))
    stepped, seconds = 0, 0.0
    for _ in range(steps):
        ids = np.sort(rng.choice(envs, count, replace=False)).astype(np.int32)
        actions = np.zeros(count, dtype=np.int32)
        started = time.perf_counter()
        pool.send(actions, ids)
        observations = pool.recv()[0]
        seconds += time.perf_counter() - started
        stepped += len(observations)
    pool.close()
    return seconds / stepped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="CartPole-v1")
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # gymnasium's Box precision warnings
    rows = []
    for envs, threads in SHAPES:
        for fraction in FRACTIONS:
            cost = step_cost(args.task, envs, threads, fraction, args.steps)
            rows.append(f"| {envs} | {threads} | {fraction:.0%} | {cost * 1e6:.2f} |")
            print(rows[-1], flush=True)
    lines = [
        f"# EnvPool's own cost per env step: {args.task}",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; envpool {envpool.__version__}. "
        f"`python benchmarks/envpool_step_cost.py --task {args.task} --steps {args.steps}`: "
        "a bare pool's `send` + `recv`, no policy, nothing else running.",
        "",
        "| envs | threads | slots stepped | us per env step |",
        "|---|---|---|---|",
        *rows,
    ]
    (RESULTS / "envpool_step_cost.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
