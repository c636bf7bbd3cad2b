"""What batch invariance by construction costs: fixed tiles against the code before them.

    python benchmarks/batch_invariance.py                 # against 2b675fa, 5 rounds
    python benchmarks/batch_invariance.py --before REF --rounds 3

With ``backend.batching=tiles`` the torch backend computes a population in fixed tiles of
members (:mod:`neuroplug_backends.tiles`) so that a member's outputs are the same bits
whatever else is alive, on any CPU. Before, the alive members ran as one batched call
(``batching=alive`` now), which was invariant only where the libraries' kernels ignored the
batch (AMD; not Intel's MKL on AVX-512). This script times, in one run, the code at ``--before`` (checked out in a git
worktree) and the working tree, alternating a round at a time so a change in the
machine's load falls on both; each measurement runs in its own process with 2 PyTorch
threads:

- the population forward of P=64 Nature CNNs (4x84x84 frames, the Atari preset's network)
  and of P=256 MLPs 17-256-256-6 (a MuJoCo-sized policy), for every member alive, for
  random halves, quarters and tenths of them (episodes ending), for one member of them
  on 16 rows (the tail of an evaluation with several episodes per member), and for a
  population of one on 16 rows (a policy evaluated on 16 episodes), as rows per second;
- whole runs, frames/s of each run's second generation (its pools and kernels warm):
  ``algo=es env=breakout algo.population_size=64`` (the Nature CNN, episodes capped at
  1000 steps) and ``algo=es env=hopper algo.population_size=256`` (an MLP, where falls
  end episodes early and leave tails of few alive members);
- the 8-member PBT update (``algo=pbt algo.learner=ppo`` on CartPole, 8 envs x 64 steps
  per member, 4 minibatches, 4 epochs), the members' PPO updates stacked in one
  computation, and the alternative that would make it independent of its company, one
  product call per member (timed in the working tree only).

It prints a table and writes it, with the CPU and versions, to ``--out``
(``benchmarks/results/batch_invariance.md``). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import describe

ROOT = Path(__file__).resolve().parent.parent

RUNS = {
    "es breakout P=64": [
        "algo=es",
        "env=breakout",
        "algo.population_size=64",
        "env.max_episode_steps=1000",
    ],
    "es hopper P=256": ["algo=es", "env=hopper", "algo.population_size=256"],
}

FORWARD_CASES = {
    "nature_cnn": {"population": 64, "alive": [1.0, 0.5, 0.25, 0.1], "repeats": 16},
    "mlp": {"population": 256, "alive": [1.0, 0.5, 0.25, 0.1], "repeats": 16},
}

MEASURE = r"""
import json, statistics, sys, time
tree = sys.argv[1]
sys.path[:0] = [tree, tree + "/plugins"]
import torch
torch.set_num_threads(2)
case, choice = sys.argv[2], sys.argv[3]

def median_seconds(run, repeats):
    run(); run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter(); run(); times.append(time.perf_counter() - started)
    return statistics.median(times)

if case in ("nature_cnn", "mlp"):
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig
    from neuroplug.nets.mlp import MLP
    from neuroplug.nets.nature_cnn import NatureCNN
    from neuroplug.population.members import Population
    spec = json.loads(sys.argv[4])
    size = spec["population"]
    network = NatureCNN((4, 84, 84), 6) if case == "nature_cnn" else MLP(17, [256, 256], 6, "tanh")
    generator = torch.Generator().manual_seed(0)
    population = Population(
        bases=network.initial_params(generator).unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=torch.full((size,), 0.02),
        seed=torch.arange(size, dtype=torch.int64),
    )
    settings = {"batching": "tiles"} if choice == "tiles" else {}
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu", **settings), network)
    backend.load(population)
    inputs = network.example_inputs(size, generator)
    result = {}
    for fraction in spec["alive"]:
        count = max(1, round(fraction * size))
        alive = torch.arange(size) if count == size else torch.randperm(size, generator=generator)[:count]
        seconds = median_seconds(lambda: backend.forward(alive, inputs[alive]), 10)
        result[f"{int(fraction * 100)}% alive"] = count / seconds
    rows = spec["repeats"]
    one = torch.full((rows,), 3)
    seconds = median_seconds(lambda: backend.forward(one, inputs[:rows]), 10)
    result[f"1 of {size} members x {rows} rows"] = rows / seconds
    single = TorchBackend(TorchBackendConfig(name="torch", device="cpu", **settings), network)
    single.load(Population.dense(population.materialize(torch.tensor([3]))))
    zeros = torch.zeros(rows, dtype=torch.int64)
    seconds = median_seconds(lambda: single.forward(zeros, inputs[:rows]), 10)
    result[f"a population of 1 x {rows} rows"] = rows / seconds
    print(json.dumps(result))
else:
    from neuroplug_learners.pbt import PBT, PBTConfig
    from neuroplug.config.schema import EnvConfig, NetConfig
    from neuroplug.plugin_configs.presets import resolve
    from neuroplug.training.components import build_env_and_network, learner_context
    env, network = build_env_and_network(EnvConfig(task_id="CartPole-v1"), NetConfig(hidden_sizes=[64, 64]))
    context = learner_context(network, env, 0, 1_000_000, env_threads=2)
    config = PBTConfig(name="pbt", members=8, member={"num_envs": 8, "rollout_length": 64, "minibatches": 4, "epochs": 4})
    settings, _ = resolve(config, env)
    population = PBT(settings, context)
    rollout = population.engine.first_rollout(population, 64)
    if choice == "per-member":
        from neuroplug.nets import gradients
        batched = gradients._stacked_product
        def per_member(left, right, bias=None):
            # One product call per member: its shapes never change with its company.
            return torch.stack([
                batched(left[k : k + 1], right[k : k + 1], None if bias is None else bias[k : k + 1])[0]
                for k in range(len(left))
            ])
        gradients._stacked_product = per_member
    states = [member.state_dict() for member in population.members]
    def update():
        for member, state in zip(population.members, states):
            member.load_state_dict(state)
        population.engine.update.learn(rollout)
    seconds = median_seconds(update, 5)
    population.close()
    print(json.dumps({"updates/s": 1.0 / seconds}))
"""


def _measure(tree: Path, case: str, choice: str, spec: dict) -> dict:
    output = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tree), case, choice, json.dumps(spec)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def _run_frames_per_second(tree: Path, overrides: list[str]) -> float:
    """Frames/s of the second generation of ``python -m neuroplug`` in ``tree``."""
    with tempfile.TemporaryDirectory() as output:
        subprocess.run(
            [sys.executable, "-m", "neuroplug", *overrides, "run.max_generations=2"]
            + ["logger=none", "backend.torch_threads=2", f"run.output_dir={output}"],
            check=True,
            capture_output=True,
            cwd=tree,
            env={**os.environ, "PYTHONPATH": f"{tree}:{tree}/plugins"},
        )
        rows = (Path(output) / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    return float(rows[2].split(",")[header.index("frames_per_second")])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="2b675fa", help="the code to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--run-rounds", type=int, default=2, help="rounds of whole runs")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/batch_invariance.md"))
    args = parser.parse_args()
    worktree = Path(tempfile.mkdtemp()) / "before"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(worktree), args.before],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    runs = [
        (case, spec, tree_name, tree, choice)
        for case, spec in FORWARD_CASES.items()
        for tree_name, tree, choice in (("before", worktree, "batched"), ("tiles", ROOT, "tiles"))
    ]
    runs += [("pbt_update", {}, "before", worktree, "batched")]
    runs += [("pbt_update", {}, "now", ROOT, "batched")]
    runs += [("pbt_update", {}, "now, one call per member", ROOT, "per-member")]
    samples: dict[tuple[str, str], dict[str, list[float]]] = {}
    try:
        for round_index in range(args.rounds):
            for case, spec, tree_name, tree, choice in runs:
                result = _measure(tree, case, choice, spec)
                for metric, value in result.items():
                    samples.setdefault((case, tree_name), {}).setdefault(metric, []).append(value)
            print(f"round {round_index + 1}/{args.rounds} done", flush=True)
        for round_index in range(args.run_rounds):
            for name, overrides in RUNS.items():
                for tree_name, tree, extra in (
                    ("before", worktree, []),
                    ("tiles", ROOT, ["backend.batching=tiles"]),
                ):
                    value = _run_frames_per_second(tree, [*overrides, *extra])
                    samples.setdefault((name, tree_name), {}).setdefault("frames/s", []).append(
                        value
                    )
            print(f"run round {round_index + 1}/{args.run_rounds} done", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT)
    import torch

    lines = [
        "# Batch invariance by construction: what fixed tiles cost",
        "",
        f"`python benchmarks/batch_invariance.py --before {args.before} --rounds {args.rounds} "
        f"--run-rounds {args.run_rounds}`",
        "",
        f"- CPU: {describe()}; 2 PyTorch threads, idle machine",
        f"- torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}), "
        f"Python {platform.python_version()}",
        f"- before: `{args.before}` (the alive members in one batched call, today's "
        "`backend.batching=alive`); after: `backend.batching=tiles` (`backend.tile_rows=0`, "
        "auto: 2 Nature CNNs, 128 MLPs a tile)",
        "- medians over the rounds, each round's figure the median of 10 calls (5 updates)",
        "",
        "| case | measure | before | after | after / before |",
        "|---|---|---|---|---|",
    ]
    for case in FORWARD_CASES:
        before, after = samples[(case, "before")], samples[(case, "tiles")]
        for metric in before:
            old, new = statistics.median(before[metric]), statistics.median(after[metric])
            lines.append(
                f"| {case} P={FORWARD_CASES[case]['population']} | {metric}, rows/s "
                f"| {old:,.0f} | {new:,.0f} | {new / old:.2f} |"
            )
    for name in RUNS:
        old = statistics.median(samples[(name, "before")]["frames/s"])
        new = statistics.median(samples[(name, "tiles")]["frames/s"])
        lines.append(f"| run: {name} | frames/s | {old:,.0f} | {new:,.0f} | {new / old:.2f} |")
    old = statistics.median(samples[("pbt_update", "before")]["updates/s"])
    for name in ("now", "now, one call per member"):
        new = statistics.median(samples[("pbt_update", name)]["updates/s"])
        lines.append(
            f"| 8-member PBT update ({name}) | updates/s | {old:.2f} | {new:.2f} | {new / old:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
