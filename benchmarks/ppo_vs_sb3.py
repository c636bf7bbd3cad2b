"""neuroplug ``ppo`` against Stable-Baselines3's PPO on CartPole-v1, RL Zoo's settings.

Both train for the same env steps with the same settings (8 envs x 32 steps, 20 epochs of
one 256-transition minibatch, GAE 0.8, gamma 0.98, lr 1e-3 annealed, clip 0.2, 64-64 tanh
MLPs): neuroplug's plain ``algo=ppo env=cartpole`` preset, and SB3 run by
``benchmarks/peers/sb3_ppo_cartpole.py`` in its own venv (``--sb3-python``). They alternate
``--repeats`` times and the medians of env steps per second of learning (sampling plus
updates; start-up and evaluations excluded) are compared. SB3 runs with one torch thread
and with torch's default; its faster setting is the one compared.

    python benchmarks/ppo_vs_sb3.py --sb3-python /path/to/sb3-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import torch
from machine import describe

from neuroplug.config.paths import conf_dir
from neuroplug.experiment.hydra_store import register_schemas
from neuroplug.experiment.typed import typed_experiment
from neuroplug.training.components import build_components

RESULTS = Path(__file__).resolve().parent / "results"
PEER = Path(__file__).resolve().parent / "peers" / "sb3_ppo_cartpole.py"


def neuroplug_steps_per_second(steps: int) -> float:
    """Env steps/s of ``algo=ppo env=cartpole`` segments until ``steps`` are sampled."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        config = compose(
            config_name="config",
            overrides=["algo=ppo", "env=cartpole", f"run.max_frames={steps}", "logger=none"],
        )
    learner = build_components(typed_experiment(config)).algorithm
    done, seconds = 0, 0.0
    while done < steps:
        started = time.perf_counter()
        segment = learner.train_segment()
        seconds += time.perf_counter() - started
        done += segment.env_steps
    learner.close()
    return done / seconds


def sb3_steps_per_second(python: str, steps: int, threads: int) -> float:
    """Env steps/s of SB3's ``model.learn`` in its own venv."""
    command = [python, str(PEER), "--steps", str(steps), "--threads", str(threads)]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])["steps_per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", required=True)
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "ppo_vs_sb3.json")
    arguments = parser.parse_args()
    runs: dict[str, list[float]] = {"neuroplug": [], "sb3_1_thread": [], "sb3_default_threads": []}
    for _ in range(arguments.repeats):
        runs["neuroplug"].append(neuroplug_steps_per_second(arguments.steps))
        runs["sb3_1_thread"].append(sb3_steps_per_second(arguments.sb3_python, arguments.steps, 1))
        runs["sb3_default_threads"].append(
            sb3_steps_per_second(arguments.sb3_python, arguments.steps, 0)
        )
        print({name: values[-1] for name, values in runs.items()}, flush=True)
    medians = {name: float(np.median(values)) for name, values in runs.items()}
    best_sb3 = max(medians["sb3_1_thread"], medians["sb3_default_threads"])
    report = {
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "steps": arguments.steps,
        "runs_steps_per_second": runs,
        "median_steps_per_second": medians,
        "neuroplug_over_best_sb3": medians["neuroplug"] / best_sb3,
    }
    print(json.dumps(report, indent=1))
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
