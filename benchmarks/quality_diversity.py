"""``map_elites`` and ``cma_mae`` against pyribs on the same task, descriptor and archive:
QD-score and coverage at equal evaluations, and evaluations per second, side by side.

    python benchmarks/quality_diversity.py --peer-python /tmp/ribs-venv/bin/python \
        [--task cartpole --batch 1024 --emitter-batch 64]

``--task halfcheetah``: HalfCheetah-v4 episodes of 200 steps, the descriptor the final x
position (EnvPool's and gymnasium's ``info["x_position"]``), a grid of 50 cells over
[-5, 5], QD-score offset -200: MuJoCo's step is most of an evaluation's cost.
``--task cartpole``: CartPole-v1 (up to 500 steps), the descriptor the cart's final
position (the final observation's first entry), 50 cells over [-2.4, 2.4], offset 0: a
simulator that costs next to nothing, so what is measured is each side's own cost per step.
Both: a 64-64 tanh MLP, ``--batch`` evaluations a generation (CMA-MAE: separable CMA-ES
emitters of ``--emitter-batch``, sigma0 0.05, archive learning rate 0.01). pyribs (its own
venv, ``benchmarks/peers/pyribs_qd.py``) steps gymnasium's env one policy at a time, as its
users do; neuroplug steps EnvPool's batch. Writes ``results/quality_diversity[_<task>].md``,
``.json`` and ``.png`` (QD-score against evaluations).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from machine import describe
from neuroplug_runs import run_neuroplug

RESULTS = Path(__file__).resolve().parent / "results"
PEERS = Path(__file__).resolve().parent / "peers"


@dataclass(frozen=True)
class Task:
    """One QD task as both sides run it."""

    env: str
    """neuroplug's ``env=`` config."""
    gym_id: str
    """The same task in gymnasium (pyribs' side)."""
    episode_steps: int
    overrides: tuple[str, ...]
    """neuroplug's descriptor and archive."""
    low: float
    high: float
    offset: float
    description: str


TASKS = {
    "halfcheetah": Task(
        "halfcheetah", "HalfCheetah-v4", 200,
        ("algo.behavior=final_position", "algo.cells=[50]", "algo.bounds=[[-5,5]]"),
        -5.0, 5.0, -200.0,
        "HalfCheetah-v4, 200-step episodes, descriptor the final x position, a grid of 50 "
        "cells over [-5, 5], QD-score offset -200",
    ),
    "cartpole": Task(
        # The final observation is (x, x', theta, theta'): a grid of one cell on the last
        # three keeps the cart's position alone, as pyribs' one-dimensional grid.
        "cartpole", "CartPole-v1", 500,
        ("algo.behavior=final_obs", "algo.cells=[50,1,1,1]",
         "algo.bounds=[[-2.4,2.4],[-100,100],[-100,100],[-100,100]]"),
        -2.4, 2.4, 0.0,
        "CartPole-v1 (up to 500 steps), descriptor the cart's final position, a grid of 50 "
        "cells over [-2.4, 2.4], QD-score offset 0",
    ),
}  # fmt: skip


def neuroplug_run(
    algo: str, task: Task, generations: int, batch: int, emitter_batch: int, lanes: int = 0
) -> dict:
    """One run of ``algo``: the per-generation QD-score and coverage, and its seconds
    (the generations' own, without start-up). ``lanes``: ``scheduler.max_envs`` (0: the
    default)."""
    overrides = [
        f"algo={algo}", f"env={task.env}", f"env.max_episode_steps={task.episode_steps}",
        "net.hidden_sizes=[64,64]", *task.overrides, f"algo.qd_offset={task.offset}",
        f"run.max_generations={generations}", "run.eval_interval=0", "run.eval_episodes=1",
    ]  # fmt: skip
    if algo == "map_elites":
        overrides.append(f"algo.population_size={batch}")
    else:
        overrides += [
            f"algo.emitters={batch // emitter_batch}",
            f"algo.emitter_batch={emitter_batch}",
            "algo.sigma0=0.05",
        ]
    if lanes:
        overrides.append(f"scheduler.max_envs={lanes}")
    rows = run_neuroplug(overrides)
    seconds, curve = 0.0, []
    for row in rows:
        seconds += float(row["generation_seconds"])
        curve.append(
            {
                "evaluations": int(float(row["episodes"])),
                "qd_score": float(row["algo/qd_score"]),
                "coverage": float(row["algo/coverage"]),
                "seconds": seconds,
            }
        )
    steps = int(float(rows[-1]["env_steps"]))
    return {
        "evaluations": curve[-1]["evaluations"], "steps": steps, "seconds": seconds,
        "curve": curve,
    }  # fmt: skip


def pyribs_run(
    python: str, algo: str, task: Task, generations: int, batch: int, emitter_batch: int
) -> dict:
    result = subprocess.run(
        [python, str(PEERS / "pyribs_qd.py"), "--algo", algo, "--env", task.gym_id,
         "--generations", str(generations), "--episode-steps", str(task.episode_steps),
         "--batch", str(batch), "--emitter-batch", str(emitter_batch),
         "--low", str(task.low), "--high", str(task.high), "--offset", str(task.offset)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--task", choices=sorted(TASKS), default="halfcheetah")
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--batch", type=int, default=64, help="evaluations a generation")
    parser.add_argument("--emitter-batch", type=int, default=16, help="CMA-MAE's per emitter")
    parser.add_argument(
        "--lanes",
        type=int,
        default=0,
        help="also run neuroplug with scheduler.max_envs=LANES (episodes in flight at once)",
    )
    args = parser.parse_args()
    task = TASKS[args.task]
    stem = "quality_diversity" + ("" if args.task == "halfcheetah" else f"_{args.task}")
    sizes = (args.generations, args.batch, args.emitter_batch)
    runs = {}
    variants = [("", 0)] + ([(f" (max_envs={args.lanes})", args.lanes)] if args.lanes else [])
    for algo in ("map_elites", "cma_mae"):
        for label, lanes in variants:
            runs[f"neuroplug {algo}{label}"] = neuroplug_run(algo, task, *sizes, lanes)
        runs[f"pyribs {algo}"] = pyribs_run(args.peer_python, algo, task, *sizes)
    rows = []
    for algo, (label, _) in ((algo, variant) for algo in ("map_elites", "cma_mae")
                             for variant in variants):  # fmt: skip
        ours, theirs = runs[f"neuroplug {algo}{label}"], runs[f"pyribs {algo}"]
        rate = {name: run["evaluations"] / run["seconds"] for name, run in
                (("ours", ours), ("theirs", theirs))}  # fmt: skip
        steps = {name: run["steps"] / run["seconds"] for name, run in
                 (("ours", ours), ("theirs", theirs))}  # fmt: skip
        rows.append(
            f"| {algo}{label} | {theirs['evaluations']:,} | {theirs['curve'][-1]['qd_score']:,.0f} | "
            f"{theirs['curve'][-1]['coverage']:.2f} | {rate['theirs']:,.0f} | "
            f"{ours['curve'][-1]['qd_score']:,.0f} | {ours['curve'][-1]['coverage']:.2f} | "
            f"{rate['ours']:,.0f} | {rate['ours'] / rate['theirs']:.2f} | "
            f"{steps['theirs']:,.0f} | {steps['ours']:,.0f} | "
            f"{steps['ours'] / steps['theirs']:.2f} |"
        )
        print(rows[-1], flush=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        "# Quality diversity against pyribs: QD-score, coverage and evaluations per second",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}. "
        f"{task.description}, {args.generations} generations of {args.batch} evaluations "
        f"(CMA-MAE: emitters of {args.emitter_batch}). Nothing else ran (background runs "
        "stopped with SIGSTOP). `python benchmarks/quality_diversity.py --task "
        f"{args.task} --batch {args.batch} --emitter-batch {args.emitter_batch}"
        + (f" --lanes {args.lanes}" if args.lanes else "")
        + "`.",
        "",
        "| algorithm | evaluations | pyribs QD-score | pyribs coverage | pyribs evals/s | "
        "neuroplug QD-score | neuroplug coverage | neuroplug evals/s | evals/s ratio | "
        "pyribs steps/s | neuroplug steps/s | steps/s ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for name, run in runs.items():
        curve = run["curve"]
        axis.plot([p["evaluations"] for p in curve], [p["qd_score"] for p in curve], label=name)
    axis.set_xlabel("evaluations")
    axis.set_ylabel(f"QD-score (offset {task.offset:g})")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(RESULTS / f"{stem}.png", dpi=110)


if __name__ == "__main__":
    main()
