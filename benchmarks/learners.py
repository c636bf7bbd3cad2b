"""Learners (``ppo``, ``appo``, ``dqn``) against the simulator floor, and how fast they
solve tasks.

Measured side by side in one run on this machine:

- **sampler**: the learners' sampling loop (:class:`neuroplug.rl.sampler.Sampler`)
  with a free policy (constant actions, no network) next to the floor for the same envs and
  threads, on CartPole and Pong: what the loop itself costs per step;
- **throughput**: frames/s of one training segment of each learner next to the floor
  (EnvPool stepping the same envs with random actions on the same threads), on CartPole
  and Pong; for ``dqn`` also its replay buffer's bytes per transition;
- **solve**: the whole command ``python -m neuroplug algo=<learner> env=cartpole ...``,
  start-up included, until the evaluation reaches 475 (seeds 0-2): wall seconds and steps;
- **curves**: evaluation return against env steps: ``ppo`` (its default, CleanRL-style
  settings) on CartPole, Acrobot and LunarLander; ``dqn`` (the ``dqn_cartpole`` preset)
  on CartPole and Acrobot.

Everything goes into one JSON file (``--out``); the runs' own dirs are temporary.

    python benchmarks/learners.py                                  # everything
    python benchmarks/learners.py --learners dqn --out benchmarks/results/dqn.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe
from schedulers import measure_floor  # noqa: E402  (the floor is measured one way)

from neuroplug.config.paths import conf_dir  # noqa: E402
from neuroplug.experiment.hydra_store import register_schemas  # noqa: E402
from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CARTPOLE_PPO = [
    "env=cartpole",
    "net.hidden_sizes=[64,64]",
    "algo.rollout_length=32",
    "algo.gamma=0.98",
    "algo.gae_lambda=0.8",
    "algo.learning_rate=1e-3",
    "algo.clip_coef=0.2",
    "algo.entropy_coef=0.0",
    "algo.env_groups=1",
    "algo.torch_threads=1",
]
"""RL Zoo's CartPole-v1 PPO settings (8 envs x 32 steps, GAE 0.8, gamma 0.98, lr 1e-3)."""
SETTINGS = {
    ("ppo", "cartpole"): ["algo=ppo", *CARTPOLE_PPO, "algo.epochs=20", "algo.minibatches=1"],
    # Fewer epochs per rollout, so the learner keeps up with the sampler; V-trace corrects
    # the lag; a one-rollout queue keeps the data fresh.
    ("appo", "cartpole"): [
        "algo=appo",
        *CARTPOLE_PPO,
        "algo.epochs=8",
        "algo.minibatches=2",
        "algo.with_vtrace=true",
        "algo.queue_size=1",
    ],
    ("ppo", "pong"): ["algo=ppo", "env=pong", "algo.reward_clip=true", "algo.episodic_life=true"],
    ("appo", "pong"): ["algo=appo", "env=pong", "algo.reward_clip=true", "algo.episodic_life=true"],
    # The shipped presets; on Pong learning starts early so the segment measures learning.
    ("dqn", "cartpole"): ["+experiment=dqn_cartpole"],
    ("dqn", "pong"): ["+experiment=dqn_atari", "env=pong", "algo.learning_starts=512"],
}
SOLVE = {
    "ppo": ["algo.segment_steps=4096", "run.max_frames=150000"],
    "appo": ["algo.segment_steps=4096", "run.max_frames=150000"],
    "dqn": [],  # the preset's own budget: 50k steps, segments of 5000
}
"""Per learner, what its solve runs add to ``SETTINGS[(learner, "cartpole")]``."""
CURVES = {
    ("ppo", "CartPole-v1"): (["algo=ppo", "env=cartpole"], 100_000, 4096),
    ("ppo", "Acrobot-v1"): (["algo=ppo", "env=envpool", "env.task_id=Acrobot-v1"], 200_000, 8192),
    ("ppo", "LunarLander-v2"): (
        ["algo=ppo", "env=envpool", "env.task_id=LunarLander-v2"],
        300_000,
        16384,
    ),
    ("dqn", "CartPole-v1"): (["+experiment=dqn_cartpole"], 100_000, 5000),
    ("dqn", "Acrobot-v1"): (
        ["+experiment=dqn_cartpole", "env=envpool", "env.task_id=Acrobot-v1"],
        100_000,
        5000,
    ),
}
"""(learner, task) -> (overrides, env-step budget, segment steps) for learning curves."""


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


SAMPLER_CASES = (
    ("CartPole-v1", 8, 1, 32),
    ("CartPole-v1", 8, 2, 32),
    ("CartPole-v1", 64, 2, 32),
    ("Pong-v5", 8, 2, 128),
    ("Pong-v5", 16, 2, 128),
)
"""(task, envs, groups, rollout length) for the sampler's free-policy measurement."""


def _free_policy(spec):
    """A policy that costs nothing: the same action for every env, no network."""

    from neuroplug.rl.acting import Acted

    def act(observations: torch.Tensor, rows: slice, states: torch.Tensor | None = None):
        rows = len(observations)
        if spec.discrete:
            actions = torch.zeros(rows, dtype=torch.int64)
            env_actions = np.zeros(rows, dtype=np.int32)
        else:
            actions = torch.zeros(rows, spec.num_actions)
            env_actions = np.zeros((rows, spec.num_actions), dtype=np.float32)
        zeros = torch.zeros(rows)
        return Acted(actions, zeros, zeros, env_actions)

    return act


def _sampler_fps(loop, act, length: int, seconds: float) -> float:
    """Frames/s of ``loop`` rolling out ``length``-step rollouts for about ``seconds``."""
    before = loop.env_steps
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        loop.rollout_with(act, length)
    elapsed = time.perf_counter() - started
    return (loop.env_steps - before) * loop.env.frame_skip / elapsed


def sampler(seconds: float, repeats: int = 3) -> list[dict]:
    """The sampler's loop with a free policy against the floor, same envs and threads;
    the two alternate ``repeats`` times and the medians are compared (a shared machine's
    noise hits both)."""
    from neuroplug.config.schema import EnvConfig
    from neuroplug.envs.make import make_spec
    from neuroplug.rl.sampler import Sampler

    rows = []
    threads = os.cpu_count() or 1
    for task, envs, groups, length in SAMPLER_CASES:
        spec = make_spec(EnvConfig(task_id=task))
        loop = Sampler(spec, envs, groups, threads, torch.device("cpu"))
        loop.start(np.arange(envs))
        act = _free_policy(spec)
        loop.rollout_with(act, length)  # warm-up: the first rollout receives the resets
        floors, loops = [], []
        for _ in range(repeats):
            floors.append(measure_floor(spec, envs, threads, seconds)["frames_per_second"])
            loops.append(_sampler_fps(loop, act, length, seconds))
        loop.close()
        floor, fps = float(np.median(floors)), float(np.median(loops))
        rows.append(
            {
                "task": task,
                "envs": envs,
                "groups": groups,
                "threads": threads,
                "rollout_length": length,
                "floor_frames_per_second": floor,
                "sampler_frames_per_second": fps,
                "ratio_to_floor": fps / floor,
                "floor_runs": floors,
                "sampler_runs": loops,
            }
        )
        print(rows[-1], flush=True)
    return rows


def throughput(seconds: float, learners: list[str]) -> list[dict]:
    """One segment of each learner next to the floor, per task."""
    register_schemas()
    rows = []
    for task, steps in (("cartpole", 16384), ("pong", 2048)):
        floors: dict[int, dict] = {}
        for learner in learners:
            overrides = [*SETTINGS[(learner, task)], f"algo.segment_steps={steps}", "logger=none"]
            parts = build_components(typed_experiment(_compose(overrides)))
            num_envs = parts.algorithm.config.num_envs  # resolved: the preset fills it
            if num_envs not in floors:  # the floor for this many envs, measured once
                threads = parts.config.scheduler.env_threads or os.cpu_count() or 1
                floors[num_envs] = measure_floor(parts.env, num_envs, threads, seconds)
                rows.append({"task": task, "what": f"floor ({num_envs} envs)", **floors[num_envs]})
            floor = floors[num_envs]
            started = time.perf_counter()
            segment = parts.algorithm.train_segment()
            wall = time.perf_counter() - started
            parts.algorithm.close()
            fps = segment.frames / wall
            rows.append(
                {
                    "task": task,
                    "what": learner,
                    "frames_per_second": fps,
                    "ratio_to_floor": fps / floor["frames_per_second"],
                    "seconds": wall,
                    "env_steps_per_second": segment.env_steps / wall,
                    **{f"time_{k}": v for k, v in segment.timings.items()},
                    **{f"algo/{k}": v for k, v in segment.stats.items()},
                }
            )
            print(rows[-1], flush=True)
    return rows


def _run(overrides: list[str], out: Path) -> tuple[float, dict]:
    """Run ``python -m neuroplug`` (whole process); returns its wall seconds and metrics rows."""
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        *overrides,
        "logger=console",
        f"run.output_dir={out}",
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    return wall, list(csv.DictReader((out / "metrics.csv").open()))


def solve(workdir: Path, learners: list[str]) -> list[dict]:
    """Wall seconds (start-up included) and steps to an evaluation >= 475 on CartPole."""
    rows = []
    for learner in learners:
        for seed in (0, 1, 2):
            overrides = [
                *SETTINGS[(learner, "cartpole")],
                *SOLVE[learner],
                "run.eval_interval=1",
                f"run.seed={seed}",
            ]
            wall, metrics = _run(overrides, workdir / f"solve_{learner}_{seed}")
            last = metrics[-1]
            rows.append(
                {
                    "learner": learner,
                    "seed": seed,
                    "wall_seconds": wall,
                    "env_steps": int(float(last["env_steps"])),
                    "eval": float(last["eval_return_mean"]),
                    "solved": float(last["eval_return_mean"]) >= 475,
                }
            )
            print(rows[-1], flush=True)
    return rows


def curves(workdir: Path, learners: list[str]) -> list[dict]:
    """Evaluation return against env steps on classic tasks."""
    rows = []
    for (learner, task), (settings, budget, segment) in CURVES.items():
        if learner not in learners:
            continue
        out = workdir / f"curve_{learner}_{task}"
        overrides = [
            *settings,
            "algo.torch_threads=1",
            f"algo.segment_steps={segment}",
            f"run.max_frames={budget}",
            "run.max_generations=null",
            "run.eval_interval=1",
            "run.stop_when_solved=false",
        ]
        wall, metrics = _run(overrides, out)
        points = [(int(float(r["env_steps"])), float(r["eval_return_mean"])) for r in metrics]
        rows.append({"learner": learner, "task": task, "wall_seconds": wall, "curve": points})
        print(learner, task, wall, points, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="sampler,throughput,solve,curves")
    parser.add_argument("--learners", default="ppo,appo,dqn")
    parser.add_argument("--floor-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "learners.json")
    arguments = parser.parse_args()
    parts = arguments.parts.split(",")
    learners = arguments.learners.split(",")
    report: dict = {
        "machine": describe(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        if "sampler" in parts:
            report["sampler"] = sampler(arguments.floor_seconds)
        if "throughput" in parts:
            report["throughput"] = throughput(arguments.floor_seconds, learners)
        if "solve" in parts:
            report["solve"] = solve(workdir, learners)
        if "curves" in parts:
            report["curves"] = curves(workdir, learners)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(report, indent=1))
    print(f"wrote {arguments.out}")


if __name__ == "__main__":
    main()
