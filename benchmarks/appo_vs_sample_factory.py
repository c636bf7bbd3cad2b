"""neuroplug ``appo`` against Sample Factory 2.1.1's APPO, side by side on this machine.

The same work on both: on CartPole-v1, 8 envs, rollouts of 32 steps, 8 epochs of 2
minibatches, separate 64-64 tanh actor and critic MLPs without an RNN core or normalization
(neuroplug's discrete preset, with GAE instead of V-trace on both sides: Sample
Factory 2.1.1's learner fails with V-trace on a non-recurrent policy, ``'AttrDict' object has
no attribute 'advantages'``); on Pong, 8 EnvPool envs, rollouts of
128, 4 epochs of 4 minibatches of 256, clipped rewards and episodic life (Sample Factory's
``sf_examples/envpool/atari`` settings, which neuroplug's pixels preset copies). Sample
Factory runs in its own venv (``--sf-python``) through ``benchmarks/peers/sf_appo.py``;
neuroplug runs ``python -m neuroplug algo=appo``. Each runs ``--seconds`` of training; the
steady frames/s are compared: Sample Factory's own 10-second reports after the first 20 s,
neuroplug's per-segment frames/s after its first segment. Both sample only what their
learner takes (Sample Factory's samplers wait for free buffers; neuroplug's for room in its
queue), and neuroplug reports the share of its rollouts learned from.

    python benchmarks/appo_vs_sample_factory.py --sf-python /path/to/sf-venv/bin/python
"""

from __future__ import annotations

import argparse
import csv
import json
import os
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

RESULTS = Path(__file__).resolve().parent / "results"
PEER = Path(__file__).resolve().parent / "peers" / "sf_appo.py"
SF_ARGS = {
    "cartpole": [
        "cartpole",
        "--env=CartPole-v1",
        "--num_workers=2",
        "--num_envs_per_worker=4",
        "--rollout=32",
        "--batch_size=128",
        "--num_batches_per_epoch=2",
        "--num_epochs=8",
        "--with_vtrace=False",
        "--learning_rate=0.001",
        "--gamma=0.98",
        "--gae_lambda=0.8",
        "--exploration_loss_coeff=0.0",
        # The same network as neuroplug's: separate 64-64 tanh actor and critic MLPs, no
        # RNN core, no input or return normalization (Sample Factory's defaults are a
        # 512-512 ELU encoder, a 512-unit GRU and both normalizations).
        "--use_rnn=False",
        "--recurrence=1",
        "--encoder_mlp_layers",
        "64",
        "64",
        "--nonlinearity=tanh",
        "--actor_critic_share_weights=False",
        "--normalize_input=False",
        "--normalize_returns=False",
    ],
    "pong": ["atari", "--env=atari_pong", "--num_workers=1", "--env_agents=8"],
}
"""Sample Factory's arguments per task (its Atari example's defaults do the rest)."""
NEUROPLUG_ARGS = {
    "cartpole": ["algo=appo", "env=cartpole", "algo.with_vtrace=false", "algo.segment_steps=16384"],
    "pong": ["algo=appo", "env=pong", "algo.segment_steps=4096"],
}
FPS_LINE = re.compile(r"Fps is \(10 sec: ([0-9.na]+),")


def sample_factory_fps(
    python: str, task: str, seconds: float, workdir: Path, extra: tuple[str, ...] = ()
) -> dict:
    """Sample Factory's steady frames/s over ``seconds`` of training (``extra``: more of
    its arguments, e.g. PBT's)."""
    command = [
        python,
        str(PEER),
        *SF_ARGS[task],
        *extra,
        f"--experiment={task}",
        f"--train_dir={workdir / 'sf'}",
        f"--train_for_seconds={int(seconds)}",
        "--train_for_env_steps=1000000000",
        "--device=cpu",
        "--with_wandb=False",
    ]
    # Sample Factory 2.1.1 can hang on shutdown after --train_for_seconds (its workers
    # exit, the runner waits): its reports are read up to a deadline, then it is stopped.
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=seconds + 90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        output, _ = process.communicate()
    if not FPS_LINE.search(output):
        raise RuntimeError(f"Sample Factory reported no speed:\n{output[-3000:]}")
    reports = [float(value) for value in FPS_LINE.findall(output) if value != "nan"]
    steady = reports[2:] or reports  # reports come every 5 s; skip the first 10-20 s
    return {"frames_per_second": float(np.mean(steady)), "reports": reports}


def neuroplug_fps(task: str, seconds: float, workdir: Path) -> dict:
    """neuroplug's steady frames/s, training until about ``seconds`` have passed."""
    out = workdir / f"neuroplug_{task}"
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        *NEUROPLUG_ARGS[task],
        "run.max_frames=1000000000",
        "run.max_generations=null",
        "run.eval_interval=0",
        "run.stop_when_solved=false",
        "logger=console",
        f"run.output_dir={out}",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(seconds)
    process.send_signal(2)  # Ctrl-C: checkpoint and stop
    process.wait(timeout=300)
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    fps = [float(row["frames_per_second"]) for row in rows[1:]] or [
        float(rows[0]["frames_per_second"])
    ]
    learned = sum(float(row["algo/rollouts_learned"]) for row in rows)
    dropped = sum(
        float(row["algo/rollouts_dropped_full"]) + float(row["algo/rollouts_dropped_lag"])
        for row in rows
    )
    return {
        "frames_per_second": float(np.median(fps)),
        "segments": len(rows),
        "rollouts_learned_fraction": learned / max(learned + dropped, 1.0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf-python", required=True)
    parser.add_argument("--tasks", default="cartpole,pong")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "appo_vs_sample_factory.json")
    arguments = parser.parse_args()
    report: dict = {
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "seconds": arguments.seconds,
        "tasks": {},
    }
    with tempfile.TemporaryDirectory() as scratch:
        for task in arguments.tasks.split(","):
            workdir = Path(scratch) / task
            workdir.mkdir()
            ours = neuroplug_fps(task, arguments.seconds, workdir)
            theirs = sample_factory_fps(arguments.sf_python, task, arguments.seconds, workdir)
            report["tasks"][task] = {
                "neuroplug": ours,
                "sample_factory": theirs,
                "ratio": ours["frames_per_second"] / theirs["frames_per_second"],
            }
            print(task, json.dumps(report["tasks"][task]), flush=True)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
