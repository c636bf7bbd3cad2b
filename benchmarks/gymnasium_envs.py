"""Gymnasium envs through neuroplug (``env=gymnasium``) against EnvPool and Stable-Baselines3.

Side by side in one run on this machine, CartPole-v1 stepped with a free policy (actions
drawn before the clock starts), every env stepped every batch:

- neuroplug ``env=gymnasium``, the envs in this process (``env.vectorization=in_process``)
  and in 2 worker processes (``processes``), through the step driver the learners' sampler
  uses;
- neuroplug ``env=cartpole`` (EnvPool), through the same driver;
- Stable-Baselines3's ``DummyVecEnv`` and ``SubprocVecEnv`` over ``gymnasium.make`` envs,
  in its own venv (``--sb3-python``; ``benchmarks/peers/sb3_vec_env_rate.py``).

Then PPO training (``algo=ppo``, the CartPole preset, ``--train-frames`` frames) on
``env=gymnasium env.id=CartPole-v1`` against ``env=cartpole``: the steady frames/s of their
segments. Last, one env step of a few gymnasium envs and a worker's round trip are timed,
and Box2D envs step in this process against 2 worker processes at 8, 16 and 64 envs (where
``env.vectorization=auto`` switches).

    python benchmarks/gymnasium_envs.py --sb3-python /path/to/sb3-venv/bin/python
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
from dataclasses import replace
from pathlib import Path

import gymnasium
import numpy as np
from machine import describe

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.envs.raw_steps import step_driver

RESULTS = Path(__file__).resolve().parent / "results"
PEER = Path(__file__).resolve().parent / "peers" / "sb3_vec_env_rate.py"


def neuroplug_rate(spec, envs: int, steps: int) -> float:
    """Env steps/s of ``spec``'s pool of ``envs`` envs driven as the sampler drives it."""
    pool = make_pool(spec, np.arange(envs) + 1000)
    driver = step_driver(pool, spec.family)
    batches = steps // envs
    actions = free_actions(spec, batches, envs)
    ids = np.arange(envs, dtype=np.int32)
    try:
        driver.reset()
        driver.recv()
        for batch in range(min(100, batches)):
            driver.send(actions[batch], ids)
            driver.recv()
        started = time.perf_counter()
        for batch in range(batches):
            driver.send(actions[batch], ids)
            driver.recv()
        return batches * envs / (time.perf_counter() - started)
    finally:
        driver.close()


def free_actions(spec, batches: int, envs: int) -> np.ndarray:
    """Uniformly random actions for ``batches`` batches of ``envs`` envs, drawn up front."""
    rng = np.random.default_rng(0)
    if spec.discrete:
        return rng.integers(0, spec.num_actions, (batches, envs)).astype(np.int32)
    low, high = spec.action_low, spec.action_high
    return rng.uniform(low, high, (batches, envs, spec.num_actions)).astype(np.float32)


def sb3_rate(python: str, vec: str, envs: int, steps: int) -> dict:
    output = subprocess.run(
        [python, str(PEER), "--vec", vec, "--envs", str(envs), "--steps", str(steps)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def training_rate(env: list[str], frames: int, workdir: Path) -> dict:
    """Steady frames/s (median over segments after the first) of one ``algo=ppo`` run."""
    out = workdir / "_".join(argument.split("=")[-1] for argument in env)
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=ppo",
        *env,
        f"run.max_frames={frames}",
        "run.eval_interval=0",
        "run.stop_when_solved=false",
        "logger=console",
        f"run.output_dir={out}",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    steady = [float(row["frames_per_second"]) for row in rows[1:]]
    return {
        "frames": int(float(rows[-1]["frames"])),
        "seconds": seconds,
        "steady_frames_per_second": float(np.median(steady)),
    }


def step_costs() -> dict:
    """Microseconds of one env step (random actions) and of a worker's round trip."""
    costs = {}
    for env_id in ("CartPole-v1", "Acrobot-v1", "LunarLander-v3", "BipedalWalker-v3"):
        try:
            env = gymnasium.make(env_id, disable_env_checker=True)
        except Exception as error:  # Box2D missing: say so, measure the rest
            costs[env_id] = f"not built: {type(error).__name__}"
            continue
        env.reset(seed=0)
        env.action_space.seed(0)
        started, count = time.perf_counter(), 0
        while count < 3000:
            *_, terminated, truncated, _ = env.step(env.action_space.sample())
            count += 1
            if terminated or truncated:
                env.reset()
        costs[env_id] = (time.perf_counter() - started) / count * 1e6
        env.close()
    spec = replace(make_spec(EnvConfig(id="CartPole-v1")), workers=1, vectorization="processes")
    pool = make_pool(spec, np.arange(1))
    ids = np.zeros(1, np.int32)
    try:
        pool.async_reset()
        pool.recv()
        started = time.perf_counter()
        for _ in range(2000):
            pool.send(np.zeros(1, np.int32), ids)
            pool.recv()
        costs["worker_round_trip_one_cartpole_step"] = (time.perf_counter() - started) / 2000 * 1e6
    finally:
        pool.close()
    return costs


def crossover(steps: int) -> dict:
    """Env steps/s in this process and in 2 worker processes, for heavier envs and pool
    sizes: where ``env.vectorization=auto`` should switch (PROCESS_BATCH_SECONDS)."""
    table: dict = {}
    for env_id in ("LunarLander-v3", "BipedalWalker-v3"):
        try:
            spec = make_spec(EnvConfig(id=env_id))
        except Exception as error:  # Box2D missing
            table[env_id] = f"not built: {error}"
            continue
        for envs in (8, 16, 64):
            here = neuroplug_rate(replace(spec, vectorization="in_process"), envs, steps)
            there = neuroplug_rate(replace(spec, workers=2, vectorization="processes"), envs, steps)
            table[f"{env_id} x{envs}"] = {
                "in_process": here,
                "2_processes": there,
                "processes_over_in_process": there / here,
                "batch_ms_in_process": envs * spec.step_seconds * 1e3,
            }
            print(env_id, envs, json.dumps(table[f"{env_id} x{envs}"]), flush=True)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sb3-python", default=None)
    parser.add_argument("--envs", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--train-frames", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=RESULTS / "gymnasium_envs.json")
    arguments = parser.parse_args()
    report: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": describe(),
        "python": platform.python_version(),
        "gymnasium": gymnasium.__version__,
        "steps": arguments.steps,
        "vec_env_steps_per_second": {},
    }
    gym_spec = make_spec(EnvConfig(id="CartPole-v1"))
    envpool_spec = make_spec(EnvConfig(task_id="CartPole-v1"))
    for envs in arguments.envs:
        rates = {
            "neuroplug_gymnasium_in_process": neuroplug_rate(
                replace(gym_spec, vectorization="in_process"), envs, arguments.steps
            ),
            "neuroplug_gymnasium_2_processes": neuroplug_rate(
                replace(gym_spec, workers=2, vectorization="processes"), envs, arguments.steps
            ),
            "neuroplug_envpool": neuroplug_rate(envpool_spec, envs, arguments.steps),
        }
        if arguments.sb3_python:
            for vec in ("dummy", "subproc"):
                peer = sb3_rate(arguments.sb3_python, vec, envs, arguments.steps)
                rates[f"sb3_{vec}"] = peer["steps_per_second"]
                report["stable_baselines3"] = peer["stable_baselines3"]
            best = max(rates["sb3_dummy"], rates["sb3_subproc"])
            rates["gymnasium_path_over_best_sb3"] = (
                max(
                    rates["neuroplug_gymnasium_in_process"],
                    rates["neuroplug_gymnasium_2_processes"],
                )
                / best
            )
        report["vec_env_steps_per_second"][str(envs)] = rates
        print(envs, json.dumps(rates), flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        report["ppo_training"] = {
            "env=gymnasium": training_rate(
                ["env=gymnasium", "env.id=CartPole-v1", "net=small"],
                arguments.train_frames,
                workdir,
            ),
            "env=cartpole": training_rate(["env=cartpole"], arguments.train_frames, workdir),
        }
        print(json.dumps(report["ppo_training"]), flush=True)
    report["step_costs_us"] = step_costs()
    report["crossover"] = crossover(arguments.steps // 10)
    print(json.dumps(report["step_costs_us"]), flush=True)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
