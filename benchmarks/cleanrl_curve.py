"""One of CleanRL's continuous-control scripts trained on this machine, its training
episodes written as a curve beside ours (``benchmarks/results/learning_curves/<name>/``):
the peer's curve at equal steps on the same CPU, where its published curves come from
other machines and other seeds.

The script runs in the peers' venv (``--peer-python``: gymnasium[mujoco]<1.0, tyro,
tensorboard) from a CleanRL checkout (``--cleanrl-dir``), on one thread as in
``off_policy.py``; each training episode it prints (``global_step=..,
episodic_return=..``) becomes a row of ``episodes.csv``, and ``summary.md`` gives the mean
training return per ``--bin`` steps next to the neuroplug runs named by ``--ours``
(their ``metrics.csv`` rows: segments' training episodes; ``<name>/seed<k>`` for another
seed than 0)::

    python benchmarks/cleanrl_curve.py --peer-python /tmp/peer-venv/bin/python \\
        --cleanrl-dir /tmp/cleanrl --algo td3 --env-id Hopper-v4 --steps 100000 \\
        --name cleanrl_td3_hopper --ours td3_hopper td3_hopper_relu
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from pathlib import Path

from machine import describe
from neuroplug_runs import run_cleanrl

CURVES = Path(__file__).resolve().parent / "results" / "learning_curves"
EPISODE = re.compile(r"global_step=(\d+), episodic_return=\[?([-0-9.e+]+)")


def train(args: argparse.Namespace, out: Path) -> list[tuple[int, float]]:
    """Run the peer's script; its training episodes as ``(step, return)``."""
    script = args.cleanrl_dir / "cleanrl" / f"{args.algo}_continuous_action.py"
    command = [args.peer_python, str(script), "--env-id", args.env_id]
    command += ["--total-timesteps", str(args.steps), "--seed", str(args.seed), "--no-cuda"]
    started = time.perf_counter()
    result = run_cleanrl(command, args.cleanrl_dir)
    if result.returncode:
        raise RuntimeError(f"{script.name} failed:\n{result.stderr[-3000:]}")
    episodes = [(int(step), float(value)) for step, value in EPISODE.findall(result.stdout)]
    with (out / "episodes.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["global_step", "episodic_return"])
        writer.writerows(episodes)
    (out / "machine.txt").write_text(
        f"{describe()}; {time.perf_counter() - started:.0f} s; {' '.join(command[1:])}\n"
    )
    return episodes


def binned(points: list[tuple[float, float]], width: int, steps: int) -> list[float | None]:
    """The mean of ``points``' values per ``width`` steps (None where a bin has none)."""
    bins: list[list[float]] = [[] for _ in range(steps // width)]
    for step, value in points:
        index = min(int(step // width), len(bins) - 1)
        bins[index].append(value)
    return [sum(values) / len(values) if values else None for values in bins]


def ours(name: str) -> list[tuple[float, float]]:
    """A neuroplug run's training returns: each segment's mean, at its last step. ``name``:
    an experiment (its seed 0) or ``<experiment>/seed<k>``."""
    run = CURVES / name if "/" in name else CURVES / name / "seed0"
    rows = csv.DictReader((run / "metrics.csv").open())
    return [
        (float(row["env_steps"]), float(row["return_mean"]))
        for row in rows
        if row["return_mean"] not in ("", "nan")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--cleanrl-dir", type=Path, required=True)
    parser.add_argument("--algo", default="td3", choices=["td3", "sac"])
    parser.add_argument("--env-id", default="Hopper-v4")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bin", type=int, default=10_000)
    parser.add_argument("--name", required=True)
    parser.add_argument("--ours", nargs="*", default=[])
    parser.add_argument("--summarise-only", action="store_true")
    args = parser.parse_args()
    out = CURVES / args.name
    out.mkdir(parents=True, exist_ok=True)
    if args.summarise_only:
        rows = list(csv.DictReader((out / "episodes.csv").open()))
        episodes = [(int(r["global_step"]), float(r["episodic_return"])) for r in rows]
    else:
        episodes = train(args, out)
    columns = {f"CleanRL {args.algo} (seed {args.seed})": binned(episodes, args.bin, args.steps)}
    for name in args.ours:
        columns[f"neuroplug {name}"] = binned(ours(name), args.bin, args.steps)
    header = "| steps | " + " | ".join(columns) + " |"
    lines = [
        f"# {args.env_id}: CleanRL's {args.algo} and neuroplug's, training returns",
        "",
        f"{(out / 'machine.txt').read_text().strip()}",
        "",
        f"Mean training-episode return per {args.bin:,} steps (exploration noise on; "
        "neuroplug's: the segments' means, each at its segment's last step).",
        "",
        header,
        "|" + "---|" * (len(columns) + 1),
    ]
    for index in range(args.steps // args.bin):
        cells = [
            "" if values[index] is None else f"{values[index]:,.0f}" for values in columns.values()
        ]
        lines.append(f"| {(index + 1) * args.bin // 1000}k | " + " | ".join(cells) + " |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
