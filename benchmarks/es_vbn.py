"""ES on Atari with and without virtual batch norm, side by side at the same frames.

    python benchmarks/es_vbn.py                      # Breakout, 5M frames per arm, seed 0
    python benchmarks/es_vbn.py --frames 20000000 --seeds 0 1 --env pong

Both arms run at once, one core each (``backend.torch_threads=1``, ``scheduler.env_threads=1``),
so they share the machine alike; everything else is the same command with ``net.vbn=true``
or ``net.vbn=false``. Each run writes into
``benchmarks/results/es_vbn_<env>/<arm>/seed<k>/``; the script then draws ``curves.png``
(population mean return) and ``eval_curves.png`` (the deployed policy) and writes
``summary.md``. Checkpoints are deleted afterwards; ``metrics.csv`` and ``config.yaml`` stay.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ARMS = {"vbn": "net.vbn=true", "no_vbn": "net.vbn=false"}


def _command(env: str, frames: int, seed: int, arm: str, run_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=es",
        f"env={env}",
        "env.max_episode_steps=1000",
        ARMS[arm],
        "backend.torch_threads=1",
        "scheduler.env_threads=1",
        "run.eval_interval=5",
        "run.eval_episodes=5",
        f"run.seed={seed}",
        f"run.max_frames={frames}",
        "run.stop_when_solved=false",
        "logger=console",
        f"run.output_dir={run_dir}",
    ]


def _rows(run_dir: Path) -> list[dict[str, str]]:
    with (run_dir / "metrics.csv").open(newline="") as stream:
        return list(csv.DictReader(stream))


def _last(rows: list[dict[str, str]], key: str) -> float:
    values = [float(row[key]) for row in rows if row.get(key) not in (None, "", "nan")]
    return values[-1] if values else float("nan")


def _best(rows: list[dict[str, str]], key: str) -> float:
    values = [float(row[key]) for row in rows if row.get(key) not in (None, "", "nan")]
    return max(values) if values else float("nan")


def load_overhead(population: int, repeats: int) -> dict[str, float]:
    """Seconds ``backend.load`` takes for an ES population of Nature CNNs on Atari frames,
    with and without virtual batch norm: what it adds per generation (the statistics of
    every member on 128 reference frames, then the fold), at PyTorch's thread count here."""
    import torch
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

    from neuroplug.nets.nature_cnn import NatureCNN
    from neuroplug.population.members import Population

    seconds = {}
    for vbn in (False, True):
        network = NatureCNN((4, 84, 84), 4, vbn=vbn)
        network.reference_batch = network.example_inputs(128, torch.Generator().manual_seed(0))
        center = network.initial_params(torch.Generator().manual_seed(0))
        members = Population(
            center.unsqueeze(0),
            torch.zeros(population, dtype=torch.int64),
            torch.tensor([0.02, -0.02]).repeat(population // 2),
            torch.arange(population) // 2,
        )
        backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            backend.load(members)
            times.append(time.perf_counter() - started)
        seconds["vbn" if vbn else "no_vbn"] = min(times)
    return seconds


def main() -> None:
    """Run both arms for every seed, then summarise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="breakout")
    parser.add_argument("--frames", type=int, default=5_000_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--summarise-only", action="store_true")
    parser.add_argument(
        "--load-overhead",
        action="store_true",
        help="only time backend.load of a population of 64 with and without it",
    )
    arguments = parser.parse_args()
    if arguments.load_overhead:
        print(load_overhead(64, 3))
        return
    out = RESULTS / f"es_vbn_{arguments.env}"
    runs = {(arm, seed): out / arm / f"seed{seed}" for seed in arguments.seeds for arm in ARMS}
    if not arguments.summarise_only:
        for seed in arguments.seeds:
            started, processes = time.time(), {}
            for arm in ARMS:
                run_dir = runs[arm, seed]
                shutil.rmtree(run_dir, ignore_errors=True)
                run_dir.mkdir(parents=True)
                command = _command(arguments.env, arguments.frames, seed, arm, run_dir)
                print(" ".join(command), flush=True)
                log = (run_dir / "console.txt").open("w")
                processes[arm] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            for arm, process in processes.items():
                if process.wait() != 0:
                    raise SystemExit(f"{arm} seed {seed} failed: see {runs[arm, seed]}/console.txt")
                print(f"{arm} seed {seed}: {time.time() - started:.0f} s", flush=True)
            for arm in ARMS:
                for extra in ("checkpoints", ".hydra"):
                    shutil.rmtree(runs[arm, seed] / extra, ignore_errors=True)
                for leftover in ("neuroplug.log", ".neuroplug.lock"):
                    (runs[arm, seed] / leftover).unlink(missing_ok=True)
    _summarise(arguments, out, runs)


def _summarise(arguments: argparse.Namespace, out: Path, runs: dict) -> None:
    from neuroplug.tools.plot import load_curves, plot_curves

    directories = [out / arm for arm in ARMS]
    plot_curves(load_curves(directories), out / "curves.png", "return_mean")
    plot_curves(load_curves(directories), out / "eval_curves.png", "eval_return_mean")
    import envpool
    import torch

    lines = [
        f"# ES on {arguments.env} with and without virtual batch norm",
        "",
        f"- command: `python benchmarks/es_vbn.py --env {arguments.env} --frames "
        f"{arguments.frames} --seeds {' '.join(map(str, arguments.seeds))}`; each run is "
        f"`{' '.join(_command(arguments.env, arguments.frames, 0, 'vbn', Path('DIR'))[3:])}` "
        "with its arm's `net.vbn` and seed",
        "- both arms of a seed ran at once, one core each (compare them on frames: the "
        "wall times also carry whatever else the machine ran); "
        f"torch {torch.__version__}, envpool {envpool.__version__}",
        f"- measured on: {time.strftime('%Y-%m-%d')}",
        "",
        "| arm | seed | frames | generations | wall time (s) | frames/s | population mean "
        "return, last generation | best generation's mean | final eval | best eval |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (arm, seed), run_dir in runs.items():
        rows = _rows(run_dir)
        frames, elapsed = _last(rows, "frames"), _last(rows, "elapsed")
        lines.append(
            f"| {arm} | {seed} | {frames:,.0f} | {_last(rows, 'generation'):.0f} "
            f"| {elapsed:.0f} | {frames / elapsed:,.0f} | {_last(rows, 'return_mean'):.2f} "
            f"| {_best(rows, 'return_mean'):.2f} | {_last(rows, 'eval_return_mean'):.1f} "
            f"| {_best(rows, 'eval_return_mean'):.1f} |"
        )
    lines += [
        "",
        "Curves: `curves.png` (population mean return), `eval_curves.png` (deployed policy, "
        "5 episodes every 5 generations), against frames and wall time.",
    ]
    (out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
