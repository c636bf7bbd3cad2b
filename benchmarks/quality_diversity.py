"""``map_elites`` and ``cma_mae`` against pyribs on the same task, descriptor and archive:
QD-score and coverage at equal evaluations, and evaluations per second, side by side.

    python benchmarks/quality_diversity.py --peer-python /tmp/ribs-venv/bin/python

HalfCheetah-v4 episodes of ``--episode-steps`` (200) steps, the descriptor the final x
position (EnvPool's and gymnasium's ``info["x_position"]``), a grid of 50 cells over
[-5, 5], a 64-64 tanh MLP, batches of 64 (CMA-MAE: 4 separable CMA-ES emitters of 16,
sigma0 0.05, archive learning rate 0.01), QD-score offset -200. pyribs (its own venv,
``benchmarks/peers/pyribs_qd.py``) steps gymnasium's HalfCheetah one policy at a time, as
its users do; neuroplug steps EnvPool's batch. Writes ``results/quality_diversity.md``,
``.json`` and ``quality_diversity.png`` (QD-score against evaluations).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import torch
from machine import describe
from neuroplug_runs import run_neuroplug

RESULTS = Path(__file__).resolve().parent / "results"
PEERS = Path(__file__).resolve().parent / "peers"


def neuroplug_run(algo: str, generations: int, steps: int) -> dict:
    """One run of ``algo``: the per-generation QD-score and coverage, and its seconds
    (the generations' own, without start-up)."""
    overrides = [
        f"algo={algo}", "env=halfcheetah", f"env.max_episode_steps={steps}",
        "net.hidden_sizes=[64,64]", "algo.behavior=final_position", "algo.cells=[50]",
        "algo.bounds=[[-5,5]]", "algo.qd_offset=-200", f"run.max_generations={generations}",
        "run.eval_interval=0", "run.eval_episodes=1",
    ]  # fmt: skip
    if algo == "map_elites":
        overrides.append("algo.population_size=64")
    else:
        overrides += ["algo.emitters=4", "algo.emitter_batch=16", "algo.sigma0=0.05"]
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
    return {"evaluations": curve[-1]["evaluations"], "seconds": seconds, "curve": curve}


def pyribs_run(python: str, algo: str, generations: int, steps: int) -> dict:
    result = subprocess.run(
        [python, str(PEERS / "pyribs_qd.py"), "--algo", algo, "--generations", str(generations),
         "--episode-steps", str(steps)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--generations", type=int, default=30)
    parser.add_argument("--episode-steps", type=int, default=200)
    args = parser.parse_args()
    runs = {}
    for algo in ("map_elites", "cma_mae"):
        runs[f"neuroplug {algo}"] = neuroplug_run(algo, args.generations, args.episode_steps)
        runs[f"pyribs {algo}"] = pyribs_run(
            args.peer_python, algo, args.generations, args.episode_steps
        )
    rows = []
    for algo in ("map_elites", "cma_mae"):
        ours, theirs = runs[f"neuroplug {algo}"], runs[f"pyribs {algo}"]
        rate = {name: run["evaluations"] / run["seconds"] for name, run in
                (("ours", ours), ("theirs", theirs))}  # fmt: skip
        rows.append(
            f"| {algo} | {theirs['evaluations']:,} | {theirs['curve'][-1]['qd_score']:,.0f} | "
            f"{theirs['curve'][-1]['coverage']:.2f} | {rate['theirs']:,.0f} | "
            f"{ours['curve'][-1]['qd_score']:,.0f} | {ours['curve'][-1]['coverage']:.2f} | "
            f"{rate['ours']:,.0f} | {rate['ours'] / rate['theirs']:.2f} |"
        )
        print(rows[-1], flush=True)
    (RESULTS / "quality_diversity.json").write_text(json.dumps(runs, indent=1) + "\n")
    lines = [
        "# Quality diversity against pyribs: QD-score, coverage and evaluations per second",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}. "
        f"HalfCheetah-v4, {args.episode_steps}-step episodes, descriptor the final x position, "
        f"a grid of 50 cells over [-5, 5], QD-score offset -200, {args.generations} "
        "generations of 64 evaluations. Nothing else ran (background runs stopped with "
        "SIGSTOP). `python benchmarks/quality_diversity.py`.",
        "",
        "| algorithm | evaluations | pyribs QD-score | pyribs coverage | pyribs evals/s | "
        "neuroplug QD-score | neuroplug coverage | neuroplug evals/s | evals/s ratio |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
    ]
    (RESULTS / "quality_diversity.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 4))
    for name, run in runs.items():
        curve = run["curve"]
        axis.plot([p["evaluations"] for p in curve], [p["qd_score"] for p in curve], label=name)
    axis.set_xlabel("evaluations")
    axis.set_ylabel("QD-score (offset -200)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(RESULTS / "quality_diversity.png", dpi=110)


if __name__ == "__main__":
    main()
