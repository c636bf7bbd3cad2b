"""``td3`` and ``sac`` against CleanRL's scripts and Stable-Baselines3's SAC, and ``dqn``
against Stable-Baselines3's DQN: env steps per second at equal settings, side by side in
one run.

DQN: CartPole-v1 with RL Zoo's settings on both sides (256-256 ReLU, batch 64, lr 2.3e-3,
learning starts 1000, a gradient step per two env steps, plain one-step DQN), ``--dqn-steps``
env steps; neuroplug keeps its 8 envs (the same gradient steps per env step).

Every run: one HalfCheetah env, CleanRL's settings (256-256 ReLU actor and twin critics,
batch 256, buffer 1M, one gradient step per env step after ``--learning-starts`` uniformly
random steps), ``--steps`` env steps in all; steps per second over the whole run, as
CleanRL prints its SPS (its running average since its start). The peers run in their own
venv (``--peer-python``: stable-baselines3, gymnasium[mujoco], tyro, tensorboard) on
gymnasium's HalfCheetah-v4; CleanRL's scripts from a checkout (``--cleanrl-dir``, the
``cleanrl`` repository's root). neuroplug steps EnvPool's HalfCheetah-v4.

    python benchmarks/off_policy.py --peer-python /tmp/sb3-venv/bin/python \\
        --cleanrl-dir /path/to/cleanrl
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

import torch
from machine import describe
from neuroplug_runs import run_cleanrl, run_neuroplug

RESULTS = Path(__file__).resolve().parent / "results" / "off_policy.md"
PEERS = Path(__file__).resolve().parent / "peers"


def peer_command(python: str, script: Path, precision: str) -> list[str]:
    """How a peer's script is started: as it is, or with PyTorch's float32 matmul
    precision set first (``--matmul-precision``: both sides at the same precision)."""
    if precision == "highest":
        return [python, str(script)]
    return [python, str(PEERS / "with_matmul_precision.py"), precision, str(script)]


def neuroplug_sps(
    algo: str, steps: int, starts: int, threads: int, precision: str = "highest"
) -> float:
    rows = run_neuroplug(
        [
            f"algo={algo}",
            "env=halfcheetah",
            "net.activation=relu",
            f"algo.learning_starts={starts}",
            f"algo.segment_steps={steps}",
            f"run.max_frames={steps}",
            "run.eval_interval=0",
            "run.eval_episodes=1",
            f"algo.torch_threads={threads}",
            f"run.matmul_precision={precision}",
        ]
    )
    # The segments' sampling and learning time, as CleanRL's SPS counts from after its
    # set-up.
    seconds = sum(float(row["segment_seconds"]) for row in rows)
    return float(rows[-1]["env_steps"]) / seconds


def cleanrl_sps(
    python: str,
    root: Path,
    algo: str,
    steps: int,
    starts: int,
    precision: str = "highest",
    threads: int = 1,
) -> float:
    script = root / "cleanrl" / f"{algo}_continuous_action.py"
    command = [
        *peer_command(python, script, precision),
        "--env-id",
        "HalfCheetah-v4",
        "--total-timesteps",
        str(steps),
        "--learning-starts",
        str(starts),
        "--no-cuda",
        "--seed",
        "1",
    ]
    result = run_cleanrl(command, root, threads)
    rates = re.findall(r"SPS: (\d+)", result.stdout)
    if not rates:
        raise RuntimeError(f"CleanRL {algo} printed no SPS:\n{result.stderr[-2000:]}")
    return float(rates[-1])


def sb3_sps(
    python: str, steps: int, starts: int, precision: str = "highest", threads: int = 1
) -> float:
    command = [
        *peer_command(python, PEERS / "sb3_sac.py", precision),
        "--steps",
        str(steps),
        "--learning-starts",
        str(starts),
        "--threads",
        str(threads),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])["sps"]


def neuroplug_dqn_sps(steps: int, threads: int) -> float:
    """Env steps per second of a whole ``dqn`` run at RL Zoo's CartPole settings (the
    segments' time, without start-up)."""
    rows = run_neuroplug(
        [
            "algo=dqn",
            "env=cartpole",
            "net.hidden_sizes=[256,256]",
            "net.activation=relu",
            "algo.batch_size=64",
            "algo.learning_rate=2.3e-3",
            "algo.learning_starts=1000",
            "algo.double_q=false",
            "algo.n_step=1",
            f"run.max_frames={steps}",
            "run.stop_when_solved=false",
            "run.eval_interval=0",
            "run.eval_episodes=1",
            f"algo.torch_threads={threads}",
        ]
    )
    seconds = sum(float(row["segment_seconds"]) for row in rows)
    return float(rows[-1]["env_steps"]) / seconds


def sb3_dqn_sps(python: str, steps: int, threads: int = 1) -> float:
    result = subprocess.run(
        [python, str(PEERS / "sb3_dqn.py"), "--steps", str(steps), "--threads", str(threads)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])["sps"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True)
    parser.add_argument("--cleanrl-dir", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=15_000)
    parser.add_argument("--learning-starts", type=int, default=5_000)
    parser.add_argument("--dqn-steps", type=int, default=50_000)
    parser.add_argument(
        "--dqn-rounds", type=int, default=3, help="alternating dqn rounds (medians reported)"
    )
    parser.add_argument("--learners", nargs="+", default=["td3", "sac", "dqn"])
    parser.add_argument(
        "--matmul-precision",
        default="highest",
        choices=["highest", "high", "medium"],
        help="td3/sac: run.matmul_precision, and the same torch setting in the peers",
    )
    parser.add_argument(
        "--peer-threads",
        type=int,
        nargs="+",
        default=[1],
        help="td3/sac: the peers' torch threads, a run per count (neuroplug runs 1 and auto)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    steps, starts = args.steps, args.learning_starts
    rows = []
    if "dqn" in args.learners:
        # Alternating rounds, medians: this VM's speed moves by a quarter within minutes.
        rounds = [
            (
                {t: sb3_dqn_sps(args.peer_python, args.dqn_steps, t) for t in args.peer_threads},
                {t: neuroplug_dqn_sps(args.dqn_steps, t) for t in (1, 0)},
            )
            for _ in range(args.dqn_rounds)
        ]
        print("dqn rounds (SB3 by threads, neuroplug 1 thread and auto):", rounds, flush=True)
        ours = {t: statistics.median(mine[t] for _, mine in rounds) for t in (1, 0)}
        for threads in args.peer_threads:
            rate = statistics.median(theirs[threads] for theirs, _ in rounds)
            rows.append(
                f"| dqn (CartPole, RL Zoo settings) | Stable-Baselines3 ({threads} "
                f"thread{'s' if threads > 1 else ''}) | {rate:,.0f} | {ours[1]:,.0f} | "
                f"{ours[0]:,.0f} | {max(ours.values()) / rate:.2f} |"
            )
            print(rows[-1], flush=True)
    for algo in [name for name in ("td3", "sac") if name in args.learners]:
        precision = args.matmul_precision
        ours = {t: neuroplug_sps(algo, steps, starts, t, precision) for t in (1, 0)}
        for threads in args.peer_threads:
            theirs = {
                "CleanRL": cleanrl_sps(
                    args.peer_python, args.cleanrl_dir, algo, steps, starts, precision, threads
                )
            }
            if algo == "sac":
                theirs["Stable-Baselines3"] = sb3_sps(
                    args.peer_python, steps, starts, precision, threads
                )
            for peer, rate in theirs.items():
                best = max(ours.values())
                rows.append(
                    f"| {algo} | {peer} ({threads} thread{'s' if threads > 1 else ''}) | "
                    f"{rate:,.0f} | {ours[1]:,.0f} | {ours[0]:,.0f} | {best / rate:.2f} |"
                )
                print(rows[-1], flush=True)
    lines = [
        "# Off-policy learners against CleanRL and Stable-Baselines3: env steps per second",
        "",
        f"{time.strftime('%Y-%m-%d')}, {describe()}; torch {torch.__version__}. td3 and sac: "
        f"HalfCheetah, {steps:,} steps of one env, the first {starts:,} uniformly random, then "
        "a gradient step per env step (256-256 ReLU actor and critics, batch 256). dqn: "
        f"CartPole-v1, {args.dqn_steps:,} env steps at RL Zoo's settings, the median of "
        f"{args.dqn_rounds} alternating rounds. td3 and sac at float32 matmul precision "
        f"{args.matmul_precision!r} on both sides. Nothing else ran "
        "(background runs stopped with SIGSTOP). `python benchmarks/off_policy.py`.",
        "",
        "| learner | peer | peer steps/s | neuroplug steps/s (1 thread) | neuroplug (auto "
        "threads) | neuroplug / peer |",
        "|---|---|---|---|---|---|",
        *rows,
    ]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
