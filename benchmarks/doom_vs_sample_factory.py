"""Doom learned by neuroplug and by Sample Factory 2.1.1's own ViZDoom example, one after
the other on this machine, for the same frames.

neuroplug: ``python -m neuroplug algo=appo env=doom_basic net.core=gru`` (the ``doom``
preset: Sample Factory's Doom settings; a Nature CNN encoder, a GRU of 512 and linear
heads). Sample Factory: ``sf_examples.vizdoom.train_vizdoom --env=doom_basic`` in its own
venv (``--sf-python``, with ``vizdoom`` from the registry), with its Doom defaults (a GRU
of 512 after its ``convnet_simple`` encoder) and the batch of neuroplug's preset: 2
workers of 16 envs in 2 splits, rollouts and recurrence of 32, batches of 1024, one epoch.
Both count frames as game tics (4 per agent step).

Each run writes its curve (frames, wall seconds, mean training return) into
``--out``/<name>.csv; the table compares their steady frames/s and final returns.
``--neuroplug-arm 'NAME OVERRIDE ...'`` (repeatable) runs neuroplug once per arm with
those overrides added, before Sample Factory; ``--only NAME`` runs one arm.

    python benchmarks/doom_vs_sample_factory.py --sf-python /tmp/sf-venv/bin/python \\
        --frames 2000000 --out benchmarks/results/doom_basic --neuroplug-arm neuroplug \\
        --neuroplug-arm "neuroplug_bf16 algo.encoder_precision=bfloat16"
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from machine import describe

SF_FPS = re.compile(
    r"Fps is \(10 sec: ([0-9.na]+), 60 sec: [0-9.na]+, 300 sec: [0-9.na]+\)\. "
    r"Total num frames: (\d+)"
)
SF_REWARD = re.compile(r"Avg episode reward: \[\(0, '(-?[0-9.]+)'\)\]")


def run_neuroplug(
    task: str, frames: int, out: Path, seed: int, name: str, overrides: list[str]
) -> dict:
    """neuroplug's run (``overrides`` added to its command); its curve from metrics.csv."""
    run_dir = out / f"{name}_run"
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=appo",
        f"env={task}",
        "net.core=gru",
        f"run.max_frames={frames}",
        "run.eval_interval=0",
        "run.stop_when_solved=false",
        f"run.seed={seed}",
        "logger=console",
        f"run.output_dir={run_dir}",
        *overrides,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"neuroplug failed:\n{done.stderr[-3000:]}")
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    curve = [
        {
            "frames": int(float(row["frames"])),
            "seconds": float(row["elapsed"]),
            "return_mean": _number(row["return_mean"]),
            "episodes": int(float(row["episodes"])),
        }
        for row in rows
    ]
    fps = [float(row["frames_per_second"]) for row in rows[1:]]
    return {
        "command": " ".join(command[1:]),
        "wall_seconds": wall,
        "frames": curve[-1]["frames"],
        "frames_per_second_steady": float(np.median(fps)) if fps else None,
        "frames_per_second_overall": curve[-1]["frames"] / wall,
        "curve": curve,
        "first_line": done.stdout.splitlines()[0] if done.stdout else "",
    }


def _number(text: str) -> float | None:
    value = float(text) if text else float("nan")
    return None if np.isnan(value) else value


def run_sample_factory(python: str, task: str, frames: int, out: Path, seed: int) -> dict:
    """Sample Factory's own ViZDoom example; its curve from its 10-second reports."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            python,
            "-m",
            "sf_examples.vizdoom.train_vizdoom",
            f"--env={task}",
            "--experiment=doom",
            f"--train_dir={scratch}",
            f"--train_for_env_steps={frames}",
            f"--seed={seed}",
            "--num_workers=2",
            "--num_envs_per_worker=16",
            "--worker_num_splits=2",
            "--rollout=32",
            "--recurrence=32",
            "--batch_size=1024",
            "--num_batches_per_epoch=1",
            "--num_epochs=1",
            "--device=cpu",
            "--with_wandb=False",
            "--save_every_sec=100000",
        ]
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        lines, curve, reward = [], [], None
        for line in process.stdout:
            lines.append(line)
            now = time.perf_counter() - started
            if match := SF_REWARD.search(line):
                reward = float(match.group(1))
            if match := SF_FPS.search(line):
                fps = float(match.group(1)) if match.group(1) != "nan" else None
                curve.append(
                    {
                        "frames": int(match.group(2)),
                        "seconds": now,
                        "fps": fps,
                        "return_mean": reward,
                    }
                )
        process.wait()
        wall = time.perf_counter() - started
    if not curve:
        raise RuntimeError("Sample Factory reported nothing:\n" + "".join(lines[-60:]))
    steady = [point["fps"] for point in curve[2:] if point["fps"]]
    return {
        "command": " ".join(command[1:]),
        "wall_seconds": wall,
        "frames": curve[-1]["frames"],
        "frames_per_second_steady": float(np.median(steady)) if steady else None,
        "frames_per_second_overall": curve[-1]["frames"] / wall,
        "curve": curve,
    }


def write_curve(path: Path, curve: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=sorted({key for row in curve for key in row}))
        writer.writeheader()
        writer.writerows(curve)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf-python", required=True)
    parser.add_argument("--task", default="doom_basic")
    parser.add_argument("--frames", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--neuroplug-arm",
        action="append",
        default=[],
        metavar="'NAME OVERRIDE ...'",
        help="a neuroplug run named NAME with these overrides (repeatable; default: one arm "
        "'neuroplug' with none), e.g. 'neuroplug_bf16 algo.encoder_precision=bfloat16'",
    )
    parser.add_argument("--only", default=None, help="run only this arm (or sample_factory)")
    parser.add_argument("--out", type=Path, required=True)
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    report_path = arguments.out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    report.update(
        {
            "machine": describe(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "task": arguments.task,
            "frames": arguments.frames,
            "seed": arguments.seed,
        }
    )
    arms = [arm.split() for arm in arguments.neuroplug_arm or ["neuroplug"]]
    runs = {
        name: lambda name=name, given=given: run_neuroplug(
            arguments.task, arguments.frames, arguments.out, arguments.seed, name, given
        )
        for name, *given in arms
    }
    runs |= {
        "sample_factory": lambda: run_sample_factory(
            arguments.sf_python, arguments.task, arguments.frames, arguments.out, arguments.seed
        ),
    }
    for name, run in runs.items():
        if arguments.only not in (None, name):
            continue
        result = run()
        write_curve(arguments.out / f"{name}.csv", result.pop("curve"))
        report[name] = result
        report_path.write_text(json.dumps(report, indent=1))
        print(name, json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
