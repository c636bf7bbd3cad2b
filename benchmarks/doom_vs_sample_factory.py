"""Doom learned by neuroplug and by Sample Factory 2.1.1's own ViZDoom example, one after
the other on this machine, for the same frames.

neuroplug: ``python -m neuroplug algo=appo env=doom_basic net.core=gru`` (the ``doom``
preset: Sample Factory's Doom settings; a Nature CNN encoder, a GRU of 512 and linear
heads). Sample Factory: ``sf_examples.vizdoom.train_vizdoom --env=doom_basic`` in its own
venv (``--sf-python``, with ``vizdoom`` from the registry), with its Doom defaults (a GRU
of 512 after its ``convnet_simple`` encoder) and the batch of neuroplug's preset: 2
workers of 16 envs in 2 splits, rollouts and recurrence of 32, batches of 1024, one epoch.
Both count frames as game tics (4 per agent step).

``--task doom_duel_bots``: a duel against Doom's bot on Sample Factory's own ``ssl2`` map,
4-minute games, frame skip 2, played by ``env=doom_duel`` loading that map from Sample
Factory's package (one player, one bot, its frag count its score: Sample Factory's true
objective there; paid Sample Factory's shaped reward times 0.5, as its recipe is) beside
Sample Factory's recipe for it (its paper's ``paper_doom_duel_bots``: gamma 0.995, frame
skip 2, a GRU, reward scale 0.5 on its shaped reward, 128 x 72 colour screens with its
extra inputs and full action space), at the small scale of this machine: 8 envs (2 workers
of 4), rollouts and recurrence of 32, batches of 256, one epoch, one policy (no PBT).
Frames are game tics on both sides.

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
SF_SCENARIOS = "sf_examples/vizdoom/doom/scenarios"
"""Where Sample Factory's package keeps its Doom maps (its ``ssl2`` duel map among them)."""
DUEL_FRAME_SKIP = 2
"""Tics a step in the duel, on both sides (its recipe's)."""


def neuroplug_task(task: str, sf_python: str) -> list[str]:
    """neuroplug's overrides for ``task`` (its frames are game tics, as Sample Factory's)."""
    if task != "doom_duel_bots":
        return [f"env={task}"]
    site = subprocess.run(
        [sf_python, "-c", "import sf_examples, os; print(os.path.dirname(sf_examples.__file__))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    ssl2 = Path(site).parent / SF_SCENARIOS / "ssl2.cfg"
    overrides = [
        "env=doom_duel",
        f"env.kwargs.scenario={ssl2}",
        "env.kwargs.players=1",
        "env.kwargs.bots=1",
        "env.kwargs.timelimit=4",
        f"env.kwargs.frame_skip={DUEL_FRAME_SKIP}",
        "env.kwargs.reward=frags",
        "env.kwargs.shaping=sample_factory",
        "env.kwargs.shaping_scale=0.5",
        "algo.num_envs=8",
        "algo.env_groups=2",
        "algo.rollout_length=32",
        "algo.recurrence=32",
        "algo.epochs=1",
        "algo.minibatches=1",
        "algo.learning_rate=1e-4",
        "algo.gamma=0.995",
        "algo.gae_lambda=0.95",
        "algo.clip_coef=0.1",
        "algo.entropy_coef=0.001",
        "algo.with_vtrace=false",
        "algo.queue_size=2",
        "algo.reward_clip=false",
    ]
    return overrides


SF_TASK_ARGUMENTS = {
    "doom_duel_bots": [
        "--env_frameskip=2",
        "--gamma=0.995",
        "--reward_scale=0.5",
        "--res_w=128",
        "--res_h=72",
        "--wide_aspect_ratio=False",
        "--num_envs_per_worker=4",
        "--batch_size=256",
    ],
}
"""Sample Factory's recipe for a task, where it differs from the Doom runs' common flags
(later flags win)."""


def run_neuroplug(
    task: str, frames: int, out: Path, seed: int, name: str, overrides: list[str], sf_python: str
) -> dict:
    """neuroplug's run (``overrides`` added to its command); its curve from metrics.csv. A
    run stopped part way resumes from its checkpoint."""
    run_dir = out / f"{name}_run"
    task_overrides = neuroplug_task(task, sf_python)
    resume = [f"run.resume={run_dir}"] if (run_dir / "checkpoints").is_dir() else []
    command = [
        sys.executable,
        "-m",
        "neuroplug",
        "algo=appo",
        *task_overrides,
        "net.core=gru",
        f"run.max_frames={frames}",
        "run.eval_interval=0",
        "run.stop_when_solved=false",
        f"run.seed={seed}",
        "logger=console",
        f"run.output_dir={run_dir}",
        *overrides,
        *resume,
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
    """Sample Factory's own ViZDoom example; its curve from its 10-second reports (and,
    where it logs one, its true objective's from its TensorBoard summaries). Its train dir
    is kept in ``out``: a run stopped part way resumes (Sample Factory's own restart)."""
    scratch = out / "sample_factory_train"
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
        "--save_every_sec=300",
        *SF_TASK_ARGUMENTS.get(task, []),
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
    objective = sample_factory_objective(python, scratch / "doom" / ".summary" / "0")
    return {
        "true_objective": objective,
        "command": " ".join(command[1:]),
        "wall_seconds": wall,
        "frames": curve[-1]["frames"],
        "frames_per_second_steady": float(np.median(steady)) if steady else None,
        "frames_per_second_overall": curve[-1]["frames"] / wall,
        "curve": curve,
    }


def sample_factory_objective(python: str, summaries: Path) -> list[dict]:
    """``(frames, mean true objective of its last games)`` from Sample Factory's
    TensorBoard summaries, read in its venv (empty where it logged none)."""
    read = (
        "import json, sys\n"
        "from tensorboard.backend.event_processing.event_accumulator import EventAccumulator\n"
        "events = EventAccumulator(sys.argv[1], size_guidance={'scalars': 0})\n"
        "events.Reload()\n"
        "tag = 'policy_stats/avg_true_objective'\n"
        "points = events.Scalars(tag) if tag in events.Tags()['scalars'] else []\n"
        "print(json.dumps([{'frames': p.step, 'true_objective': p.value} for p in points]))\n"
    )
    if not summaries.is_dir():
        return []
    done = subprocess.run([python, "-c", read, str(summaries)], capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else []


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
    report: dict = {}  # this process's header; the arms already run are read at each write
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
            arguments.task,
            arguments.frames,
            arguments.out,
            arguments.seed,
            name,
            given,
            arguments.sf_python,
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
        # Read again: another process may have run another arm meanwhile.
        done = json.loads(report_path.read_text()) if report_path.exists() else {}
        report = {**done, **report, name: result}
        report_path.write_text(json.dumps(report, indent=1))
        print(name, json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
