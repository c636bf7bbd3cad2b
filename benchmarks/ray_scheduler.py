"""``scheduler=ray`` next to ``threaded`` on this machine, and what a generation costs on paper.

Measured in one run (nothing else running):

- **throughput**: frames/s of ES evaluations (one base, mirrored seeds) on an MLP task with
  ``threaded`` and with ``ray`` at 1 and 2 workers (each worker 1 CPU, one EnvPool thread
  and one torch thread; ``threaded`` with 1 and 2 EnvPool threads);
- **overhead**: seconds per evaluation round of ``ray`` when the episodes are one step
  long, i.e. what shipping the population, the shard calls and the reduction cost;
- **bytes**: what the driver sent per round (``EvaluationResult.stats``).

The on-paper costs of a 1000-member Atari GA and ES generation on N machines are computed
from the same shipping code (``neuroplug_ray.shipping``) and written next to them.

    python benchmarks/ray_scheduler.py --out benchmarks/results/ray_scheduler.json
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import time
from pathlib import Path

import ray
import torch
from machine import describe
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig
from neuroplug_ray.scheduler import RayScheduler, RaySchedulerConfig
from neuroplug_ray.shipping import ship

from neuroplug.api import EvaluationRequest
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_spec
from neuroplug.evaluation.config import ThreadedSchedulerConfig
from neuroplug.evaluation.schedulers import ThreadedScheduler
from neuroplug.experiment.network_choice import build_network
from neuroplug.nets.policy import Policy
from neuroplug.population.members import BaseOrigin, Population

RESULTS = Path(__file__).resolve().parent / "results"


def _es_population(network, members: int) -> Population:
    center = network.initial_params(torch.Generator().manual_seed(0))
    seeds = torch.arange(members // 2, dtype=torch.int64).repeat_interleave(2)
    scale = torch.tensor([0.02, -0.02]).repeat(members // 2)
    return Population(center.unsqueeze(0), torch.zeros(members, dtype=torch.int64), scale, seeds)


def _time(scheduler, population, policy, backend, rounds: int) -> dict:
    request = EvaluationRequest(generation=0, episodes_per_member=1, seed=0)
    scheduler.evaluate(population, policy, backend, request)  # start workers, warm up
    frames, bytes_sent, started = 0, 0.0, time.perf_counter()
    for round_index in range(rounds):
        request = EvaluationRequest(generation=round_index + 1, episodes_per_member=1, seed=0)
        result = scheduler.evaluate(population, policy, backend, request)
        frames += result.frames
        bytes_sent += result.stats.get("bytes_sent", 0.0)
    seconds = time.perf_counter() - started
    return {
        "frames_per_second": frames / seconds,
        "seconds_per_round": seconds / rounds,
        "bytes_per_round": bytes_sent / rounds,
    }


def measure(task_id: str, members: int, rounds: int, steps: int | None) -> list[dict]:
    env = make_spec(EnvConfig(task_id=task_id, max_episode_steps=steps))
    network = build_network(NetConfig(hidden_sizes=[256, 256]), env)
    policy = Policy(network, env, normalize_observations=False)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    population = _es_population(network, members)
    rows = []
    for threads in (1, 2):
        config = ThreadedSchedulerConfig(name="threaded", env_threads=threads)
        torch.set_num_threads(threads)
        row = _time(ThreadedScheduler(config, env), population, policy, backend, rounds)
        rows.append(
            {"task": task_id, "steps": steps, "what": f"threaded, {threads} threads", **row}
        )
        print(rows[-1], flush=True)
    torch.set_num_threads(1)
    for workers in (1, 2):
        config = RaySchedulerConfig(name="ray", num_workers=workers, members_per_shard=8)
        scheduler = RayScheduler(config, env)
        try:
            row = _time(scheduler, population, policy, backend, rounds)
        finally:
            scheduler.close()
        rows.append({"task": task_id, "steps": steps, "what": f"ray, {workers} workers", **row})
        print(rows[-1], flush=True)
    return rows


def on_paper(machines: int = 8) -> dict:
    """Bytes and round trips of one generation of a 1000-member Atari GA and ES (Nature
    CNN, 1.7M parameters), from the shipping code itself."""
    env = make_spec(EnvConfig(task_id="Pong-v5"))
    network = build_network(NetConfig(type="nature_cnn"), env)
    params = network.num_params
    size, truncation = 1000, 20
    es = _es_population(network, size)
    previous = Population(
        torch.zeros(truncation, params),
        torch.randint(0, truncation, (size,)),
        torch.full((size,), 0.005),
        torch.arange(size, dtype=torch.int64),
    )
    ga = Population(
        torch.zeros(truncation, params),
        torch.randint(0, truncation, (size,)),
        torch.full((size,), 0.005),
        torch.arange(size, dtype=torch.int64),
        origin=BaseOrigin(previous, torch.arange(truncation)),
    )
    shards = size // 8
    return {
        "params": params,
        "members": size,
        "machines": machines,
        "es_payload_bytes": ship(1, es, None, None).size_bytes,
        "ga_payload_bytes_by_reference": ship(2, ga, None, origin_key=1).size_bytes,
        "ga_payload_bytes_dense": ship(2, ga, None, None).size_bytes,
        "full_weights_bytes": 4 * params * size,
        "shard_calls": shards,
        "round_trips_per_machine": shards / machines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "ray_scheduler.json")
    arguments = parser.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    report = {
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "ray": ray.__version__,
        "throughput": measure("HalfCheetah-v4", 32, arguments.rounds, 500),
        "overhead": measure("CartPole-v1", 32, arguments.rounds, 1),
        "on_paper": on_paper(),
    }
    ray.shutdown()
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report["on_paper"], indent=1))
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    main()
