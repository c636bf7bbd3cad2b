"""A learner's sampling on Ray actors (``scheduler=ray``) against the local sampler and RLlib.

Side by side in one run on this machine, ``algo=ppo`` (whole processes, ``python -m
neuroplug``):

- **local**: ``scheduler=threaded``, one sampler over every env (the default);
- **local shards**: ``scheduler.envs_per_shard=4`` in this process (what Ray's runs equal);
- **ray 1, ray 2**: ``scheduler=ray`` with 1 and 2 sampler actors (embedded Ray);

on CartPole (RL Zoo's PPO settings: 8 envs x 32 steps, 20 epochs of one 256-step
minibatch, 64-64 tanh actor and critic) and Pong (CleanRL's Atari settings, 8 envs x 128).
Each row gives frames/s over the whole process (start-up included) and the median of the
segments after the first (steady), the bytes the driver shipped per segment and the
sampling's own wait.

**RLlib** (``ray[rllib]``, its own venv: ``--rllib-python``): PPO on CartPole with 2 env
runners of 4 envs, rollout fragments of 32 (256 steps per update), one 256-step minibatch,
20 epochs, lr 1e-3, gamma 0.98, GAE 0.8, clip 0.2, no entropy bonus, separate 64-64 tanh
actor and critic: env steps sampled per second of ``algo.train()`` calls, against
``scheduler=ray scheduler.num_workers=2`` with the same settings.

    python benchmarks/learners_on_ray.py [--rllib-python /tmp/rllib-venv/bin/python]
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import torch
from machine import describe

RESULTS = Path(__file__).resolve().parent / "results"
COMMON = ["run.max_generations=null", "run.eval_interval=0", "run.stop_when_solved=false"]
TASKS = {
    "CartPole-v1": (["env=cartpole"], 60_000),
    "Pong-v5": (["env=pong", "algo.segment_steps=2048"], 40_960),
}
"""Task -> (overrides, frames per run)."""
SAMPLERS = {
    "local": ["scheduler=threaded"],
    "local shards": ["scheduler=threaded", "scheduler.envs_per_shard=4"],
    "ray 1": ["scheduler=ray", "scheduler.num_workers=1"],
    "ray 2": ["scheduler=ray", "scheduler.num_workers=2"],
}


def neuroplug_run(overrides: list[str], out: Path) -> dict:
    """One whole ``python -m neuroplug`` run; its wall time and per-segment records."""
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=ppo",
        *COMMON,
        *overrides,
        "logger=console",
        f"run.output_dir={out}",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    frames = float(rows[-1]["frames"])
    steady = [float(row["frames_per_second"]) for row in rows[1:]] or [
        float(rows[0]["frames_per_second"])
    ]
    shipped = [float(row.get("algo/sampler_bytes_sent") or 0.0) for row in rows]
    received = [float(row.get("algo/sampler_bytes_received") or 0.0) for row in rows]
    return {
        "frames": frames,
        "wall_seconds": wall,
        "frames_per_second": frames / wall,
        "steady_frames_per_second": float(np.median(steady)),
        "bytes_sent_per_segment": float(np.mean(shipped)),
        "bytes_received_per_segment": float(np.mean(received)),
        "segments": len(rows),
        "last_return_mean": float(rows[-1]["return_mean"]),
    }


RLLIB_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    steps_wanted = int(sys.argv[1])
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_env_runners=2, num_envs_per_env_runner=4, rollout_fragment_length=32)
        .training(
            train_batch_size_per_learner=256, minibatch_size=256, num_epochs=20, lr=1e-3,
            gamma=0.98, lambda_=0.8, clip_param=0.2, entropy_coeff=0.0, vf_loss_coeff=0.5,
            grad_clip=0.5,
        )
        .rl_module(model_config=DefaultModelConfig(
            fcnet_hiddens=[64, 64], fcnet_activation="tanh", vf_share_layers=False))
    )
    algo = config.build_algo()
    algo.train()  # warm-up: actors started, first iteration
    started, steps, iterations, first = time.perf_counter(), 0, 0, None
    while steps < steps_wanted:
        result = algo.train()
        lifetime = result["env_runners"]["num_env_steps_sampled_lifetime"]
        first = lifetime if first is None else first
        steps = lifetime - first
        iterations += 1
    seconds = time.perf_counter() - started
    print(json.dumps({"env_steps": steps, "seconds": seconds, "iterations": iterations,
                      "env_steps_per_second": steps / seconds,
                      "return_mean": result["env_runners"].get("episode_return_mean")}))
    """
)


def rllib_ppo(python: str, steps: int, workdir: Path) -> dict:
    """RLlib's PPO on CartPole (settings above): env steps/s after a warm-up iteration."""
    script = workdir / "rllib_ppo.py"
    script.write_text(RLLIB_SCRIPT)
    started = time.perf_counter()
    done = subprocess.run([python, str(script), str(steps)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    record = json.loads(done.stdout.strip().splitlines()[-1])
    record["wall_seconds"] = time.perf_counter() - started
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rllib-python", default=None)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--out", type=Path, default=RESULTS / "learners_on_ray.json")
    arguments = parser.parse_args()
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "runs": [],
    }
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        for task in arguments.tasks.split(","):
            overrides, frames = TASKS[task]
            for name, sampler in SAMPLERS.items():
                out = workdir / f"{task}_{name.replace(' ', '_')}"
                row = {
                    "task": task,
                    "sampler": name,
                    **neuroplug_run([*overrides, *sampler, f"run.max_frames={frames}"], out),
                }
                report["runs"].append(row)
                print(json.dumps(row), flush=True)
        if arguments.rllib_python:
            report["rllib_ppo_cartpole"] = rllib_ppo(arguments.rllib_python, 30_000, workdir)
            print("rllib", json.dumps(report["rllib_ppo_cartpole"]), flush=True)
            ours = next(
                row
                for row in report["runs"]
                if row["task"] == "CartPole-v1" and row["sampler"] == "ray 2"
            )
            report["ratio_ray2_vs_rllib"] = {
                "whole_process": ours["frames_per_second"]
                / report["rllib_ppo_cartpole"]["env_steps_per_second"],
                "steady": ours["steady_frames_per_second"]
                / report["rllib_ppo_cartpole"]["env_steps_per_second"],
            }
            print(json.dumps(report["ratio_ray2_vs_rllib"]), flush=True)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
