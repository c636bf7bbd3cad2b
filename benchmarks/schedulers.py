"""Schedulers against the simulator floor, measured side by side in one run.

For each task it measures, on this machine and with the same EnvPool threads:

- the **floor**: EnvPool stepping the same number of env slots with random actions
  (a free policy), auto-resetting, no network at all;
- every installed lockstep scheduler (serial, threaded, pipelined) evaluating one
  ES-style population (center + sigma * eps) with the torch backend;

and prints frames/s, the ratio to the floor and pipelined/serial. Each scheduler first
plays one warm-up evaluation, as a run's first generation does: Atari pools (without
sticky actions) are then kept and reused, as the trainer keeps them. The timed
evaluation is reported two ways: ``run`` is the whole evaluation, ``steady`` leaves out
creating EnvPools (``env_setup``: only tasks whose pools cannot be reused build them again;
EnvPool builds its envs one after another, about 80 ms per Atari env), because the
floor's pool is built before its clock starts.

``--free-policy`` swaps the network for a backend that costs nothing (zeros of the right
shape): what is left between the schedulers and the floor is the engine's own per-step
work (bookkeeping, copies, Python), the overhead a GPU cannot hide.

    python benchmarks/schedulers.py                      # both tasks, defaults below
    python benchmarks/schedulers.py --tasks mlp --population 256 --out benchmarks/results/x.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from machine import describe
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.api import Backend, BackendConfig, EvaluationRequest
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_pool, make_spec
from neuroplug.evaluation.config import PipelinedSchedulerConfig, ThreadedSchedulerConfig
from neuroplug.evaluation.schedulers import PipelinedScheduler, ThreadedScheduler, serial_config
from neuroplug.experiment.network_choice import build_network
from neuroplug.nets.policy import Policy
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population


@dataclass
class Task:
    """One benchmark task: an env, its network and a population size."""

    name: str
    task_id: str
    population: int
    max_episode_steps: int
    hidden_sizes: tuple[int, ...] = (256, 256)
    rank: int = 0
    """Low-rank (EGGROLL) perturbations of this rank for matrices of >= 65,536 entries;
    0 perturbs every parameter with full-rank noise."""


TASKS = {
    # The project's default MLP (256-256, as in OpenAI ES on Humanoid) ...
    "mlp": Task("mlp", "HalfCheetah-v4", population=256, max_episode_steps=1000),
    # ... and the 64-64 MLP common for MuJoCo locomotion.
    "mlp64": Task("mlp64", "HalfCheetah-v4", 256, max_episode_steps=1000, hidden_sizes=(64, 64)),
    # ... and the 256-256 MLP under rank-4 perturbations of its 256x256 matrix (ES with
    # algo.perturbation=lowrank), which the torch backend runs factored.
    "mlp-lowrank": Task("mlp-lowrank", "HalfCheetah-v4", 256, max_episode_steps=1000, rank=4),
    "atari": Task("atari", "Breakout-v5", population=64, max_episode_steps=1000),
}


def measure_floor(spec, lanes: int, threads: int, seconds: float) -> dict[str, float]:
    """Frames/s of EnvPool stepping ``lanes`` envs with random actions on ``threads`` threads."""
    pool = make_pool(spec, np.arange(lanes), threads)
    pool.reset()
    rng = np.random.default_rng(0)

    def random_actions() -> np.ndarray:
        if spec.discrete:
            return rng.integers(0, spec.num_actions, size=lanes).astype(np.int32)
        return rng.uniform(spec.action_low, spec.action_high, (lanes, spec.num_actions)).astype(
            np.float32
        )

    steps = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pool.step(random_actions())
        steps += lanes
    elapsed = time.perf_counter() - started
    pool.close()
    return {"frames_per_second": steps * spec.frame_skip / elapsed, "seconds": elapsed}


def es_population(network, size: int, sigma: float = 0.02, rank: int = 0) -> Population:
    """An ES population: mirrored perturbations of one center (low-rank if ``rank``)."""
    center = network.initial_params(torch.Generator().manual_seed(0))
    pairs = (size + 1) // 2
    seeds = torch.arange(1, pairs + 1, dtype=torch.int64).repeat_interleave(2)[:size]
    signs = torch.tensor([1.0, -1.0]).repeat(pairs)[:size]
    return Population(
        bases=center.unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=sigma * signs,
        seed=seeds,
        lowrank=lowrank_for(network.layout, rank, 65536) if rank else None,
    )


class FreeBackend(Backend):
    """A backend whose forward pass costs nothing: zeros of the network's output shape."""

    def __init__(self, network) -> None:
        super().__init__(BackendConfig(name="free", device="cpu"), network)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def load(self, population: Population) -> None:
        pass

    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(members), self.network.output_size)


def schedulers(spec, lanes: int, threads: int, groups: int):
    """The built-in lockstep schedulers with the same slots and threads."""
    return {
        "serial": ThreadedScheduler(serial_config(max_envs=lanes), spec),
        "threaded": ThreadedScheduler(
            # groups=1: alternate (its auto default pipelines image tasks on a GPU).
            ThreadedSchedulerConfig(name="threaded", max_envs=lanes, env_threads=threads, groups=1),
            spec,
        ),
        "pipelined": PipelinedScheduler(
            PipelinedSchedulerConfig(
                name="pipelined", max_envs=lanes, env_threads=threads, groups=groups
            ),
            spec,
        ),
    }


def run_task(task: Task, args) -> dict:
    """Floor and every scheduler for one task; returns the measurements."""
    spec = make_spec(EnvConfig(task_id=task.task_id, max_episode_steps=task.max_episode_steps))
    network = build_network(NetConfig(hidden_sizes=list(task.hidden_sizes)), spec)
    policy = Policy(network, spec, normalize_observations=False)
    if args.free_policy:
        backend = FreeBackend(network)
    else:
        backend = TorchBackend(
            TorchBackendConfig(name="torch", device=args.device, torch_threads=args.torch_threads),
            network,
        )
    population = es_population(network, task.population, rank=task.rank)
    lanes = min(args.max_envs, task.population)
    floor = measure_floor(spec, lanes, args.threads, args.floor_seconds)
    perturbation = f"rank-{task.rank} perturbations" if task.rank else "full-rank noise"
    print(
        f"[{task.name}] {task.task_id}: {network.describe()}, population {task.population}, "
        f"{perturbation}"
    )
    print(f"[{task.name}] floor: {floor['frames_per_second']:,.0f} frames/s ({lanes} envs)")
    rows = {}
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=0)
    for name, scheduler in schedulers(spec, lanes, args.threads, args.groups).items():
        # Warm-up: builds (and, where they can be, keeps) the pools, as generation 1 does.
        scheduler.evaluate(population, policy, backend, request)
        result = scheduler.evaluate(population, policy, backend, request)
        scheduler.close()
        timings = result.timings
        steady = timings["wall"] - timings.get("env_setup", 0.0)
        row = {
            "frames": result.frames,
            "run_frames_per_second": result.frames / timings["wall"],
            "steady_frames_per_second": result.frames / steady,
            **{f"seconds_{key}": value for key, value in timings.items()},
        }
        row["run_ratio"] = row["run_frames_per_second"] / floor["frames_per_second"]
        row["steady_ratio"] = row["steady_frames_per_second"] / floor["frames_per_second"]
        rows[name] = row
        print(
            f"[{task.name}] {name:9s} {row['steady_frames_per_second']:>10,.0f} frames/s steady "
            f"({row['steady_ratio']:.2f}x floor), {row['run_frames_per_second']:>10,.0f} "
            f"with env setup ({row['run_ratio']:.2f}x); env wait {timings['env']:.1f}s, "
            f"inference {timings['inference']:.1f}s, overlap {timings['overlap']:.1f}s, "
            f"env idle {timings['env_idle']:.1f}s, setup {timings['env_setup']:.1f}s"
        )
    speedup = (
        rows["pipelined"]["steady_frames_per_second"] / rows["serial"]["steady_frames_per_second"]
    )
    print(f"[{task.name}] pipelined/serial (steady): {speedup:.2f}x")
    return {
        "task": task.__dict__,
        "network": network.describe(),
        "lanes": lanes,
        "floor": floor,
        "schedulers": rows,
        "pipelined_over_serial": speedup,
    }


def describe_machine(args) -> dict:
    """What the numbers were measured on."""
    import envpool

    info = {
        "cpu": describe(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "envpool": envpool.__version__,
        "device": args.device,
        "free_policy": args.free_policy,
        "envpool_threads": args.threads,
        "load_average_before": os.getloadavg()[0],
        "torch_threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available() and args.device != "cpu":
        info["gpu"] = torch.cuda.get_device_name()
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        default="mlp,mlp64,mlp-lowrank,atari",
        help="comma-separated: " + ", ".join(TASKS),
    )
    parser.add_argument("--population", type=int, default=0, help="override every task's")
    parser.add_argument("--max-episode-steps", type=int, default=0, help="override the caps")
    parser.add_argument("--max-envs", type=int, default=256, help="env slots (lanes)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="EnvPool threads")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="intra-op threads of the torch backend (1: leaves the other cores to EnvPool)",
    )
    parser.add_argument("--groups", type=int, default=2, help="pipelined groups")
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--free-policy", action="store_true", help="a backend that costs nothing (engine overhead)"
    )
    parser.add_argument("--floor-seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, help="write the measurements here (.json)")
    args = parser.parse_args()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    machine = describe_machine(args)
    print("machine:", json.dumps(machine))
    results = {"machine": machine, "tasks": {}}
    for name in args.tasks.split(","):
        task = TASKS[name]
        if args.population:
            task.population = args.population
        if args.max_episode_steps:
            task.max_episode_steps = args.max_episode_steps
        results["tasks"][name] = run_task(task, args)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
