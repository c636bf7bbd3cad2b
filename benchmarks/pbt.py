"""A population of 8 PPO learners (``algo=pbt``) against the ways people run 8 today.

Side by side on this machine, CartPole-v1, every learner with RL Zoo's PPO settings
(neuroplug's discrete preset: 8 envs x 32 steps, 20 epochs, 64-64 tanh actor and critic):

- ``algo=pbt algo.learner=ppo algo.members=8``: one process, one sampler, the 8 members
  acting in one batched forward per step, ``--frames`` frames per member;
- one ``algo=ppo`` run of ``--frames`` frames (what one learner costs alone);
- 8 ``algo=ppo`` processes started together, ``--frames`` each (what Hydra's joblib
  launcher or Ray Tune's trials do on one machine);
- Sample Factory 2.1.1 with ``--with_pbt=True --num_policies=8`` in its own venv
  (``--sf-python``; the network of ``benchmarks/appo_vs_sample_factory.py``), run for as
  long as ``algo=pbt`` took.

Frames/s are total frames over wall-clock seconds from process start to exit (start-up
included, as a user waits for it; each run's steady per-segment rate is reported beside
it); for Sample Factory, its own steady reports. The 8 separate runs take seeds 0-7.

    python benchmarks/pbt.py [--frames 50000] [--sf-python /path/to/sf-venv/bin/python]
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from machine import describe

RESULTS = Path(__file__).resolve().parent / "results"
COMMON = [
    "env=cartpole",
    "run.max_generations=null",
    "run.eval_interval=0",
    "run.stop_when_solved=false",
    "logger=console",
]


def _neuroplug(arguments: list[str], out: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "neuroplug", *COMMON, *arguments, f"run.output_dir={out}"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _record(out: Path) -> tuple[int, float, float]:
    """(frames, the last segment's mean training return, the median frames/s of the
    segments after the first) from a run's metrics.csv."""
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    steady = [float(row["frames_per_second"]) for row in rows[1:]] or [
        float(rows[0]["frames_per_second"])
    ]
    return int(float(rows[-1]["frames"])), float(rows[-1]["return_mean"]), float(np.median(steady))


def run_together(runs: list[list[str]], workdir: Path, name: str) -> dict:
    """Start ``runs`` at once; frames/s of all of them over the wall time until the last ends."""
    started = time.perf_counter()
    outs = [workdir / f"{name}_{index}" for index in range(len(runs))]
    processes = [_neuroplug(arguments, out) for arguments, out in zip(runs, outs, strict=True)]
    for process in processes:
        _, error = process.communicate()
        if process.returncode != 0:
            raise RuntimeError(error.decode()[-3000:])
    seconds = time.perf_counter() - started
    records = [_record(out) for out in outs]
    total = sum(frames for frames, _, _ in records)
    return {
        "processes": len(runs),
        "frames": total,
        "seconds": seconds,
        "frames_per_second": total / seconds,
        "steady_frames_per_second": [steady for _, _, steady in records],
        "last_return_mean": [value for _, value, _ in records],
    }


def sample_factory_pbt(python: str, seconds: float, workdir: Path) -> dict:
    """Sample Factory's steady frames/s with PBT over 8 policies, for ``seconds``, on the
    network and settings of ``benchmarks/appo_vs_sample_factory.py``."""
    from appo_vs_sample_factory import sample_factory_fps

    return sample_factory_fps(
        python, "cartpole", seconds, workdir, ("--with_pbt=True", "--num_policies=8")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000, help="frames per learner")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--sf-python", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS / "pbt.json")
    arguments = parser.parse_args()
    members, frames = arguments.members, arguments.frames
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "frames_per_learner": frames,
        "members": members,
    }
    pbt = ["algo=pbt", "algo.learner=ppo", f"algo.members={members}"]
    ppo = ["algo=ppo", f"run.max_frames={frames}"]
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        report["pbt"] = run_together([[*pbt, f"run.max_frames={frames * members}"]], workdir, "pbt")
        print("pbt", json.dumps(report["pbt"]), flush=True)
        report["one_ppo"] = run_together([ppo], workdir, "one")
        print("one ppo", json.dumps(report["one_ppo"]), flush=True)
        separate = [[*ppo, f"run.seed={seed}"] for seed in range(members)]
        report["separate_ppo"] = run_together(separate, workdir, "separate")
        print("separate ppo", json.dumps(report["separate_ppo"]), flush=True)
        if arguments.sf_python:
            seconds = max(60.0, report["pbt"]["seconds"])
            report["sample_factory_pbt"] = sample_factory_pbt(arguments.sf_python, seconds, workdir)
            print("sample factory", json.dumps(report["sample_factory_pbt"]), flush=True)
    ours = report["pbt"]["frames_per_second"]
    report["ratios"] = {
        "pbt_vs_one_ppo": ours / report["one_ppo"]["frames_per_second"],
        "pbt_vs_separate_ppo": ours / report["separate_ppo"]["frames_per_second"],
    }
    if "sample_factory_pbt" in report:
        report["ratios"]["pbt_vs_sample_factory"] = (
            ours / report["sample_factory_pbt"]["frames_per_second"]
        )
    print(json.dumps(report["ratios"]), flush=True)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
