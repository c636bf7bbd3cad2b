"""kill -9 at several moments, then resume: the run ends exactly as if never interrupted,
and the logged metrics have every generation exactly once; with the layer table's MLP,
with a module network of the user's own (tests/support/residual_net.py), and for CMA-ES."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuroplug.testing.resume_check import same
from neuroplug.training.checkpoint import existing_checkpoints, load_checkpoint

GENERATIONS = 8
COMMON = [
    "logger=console",
    "algo.population_size=16",
    "run.eval_interval=2",
    "run.eval_episodes=2",
    "run.stop_when_solved=false",
    f"run.max_generations={GENERATIONS}",
]


NETWORKS = {
    "mlp": ["net.hidden_sizes=[16]"],
    "module": ["net.type=module", "net.module=residual_net:ResidualMLP", "net.kwargs.width=16"],
    "cma_es": ["algo=cma_es", "net.hidden_sizes=[16]"],
    "cem_rl": [
        "algo=cem_rl",
        "env=pendulum",
        "env.max_episode_steps=25",
        "net.hidden_sizes=[16]",
        "algo.critic_hidden=[16]",
        "algo.learning_starts=200",
        "algo.batch_size=16",
    ],
    "map_elites": [
        "algo=map_elites",
        "algo.variation=gaussian",
        "algo.behavior=final_obs",
        "algo.cells=[4]",
        "algo.bounds=[[-2.5,2.5]]",
        "net.hidden_sizes=[16]",
    ],
}
"""ES with the layer table's MLP and with a torch.nn.Module that exists only in the tests;
CMA-ES, whose state is a covariance matrix, paths and a step size; CEM-RL, whose state
holds a replay buffer, critics and their optimiser beside the distribution; MAP-Elites,
whose archive is checkpointed as seed chains and rebuilt on resume."""
SUPPORT = Path(__file__).resolve().parents[1] / "support"
ENVIRONMENT = {**os.environ, "PYTHONPATH": str(SUPPORT)}


def _command(run_dir, resume: bool, network: str) -> list[str]:
    target = f"run.resume={run_dir}" if resume else f"run.output_dir={run_dir}"
    return [sys.executable, "-m", "neuroplug", *COMMON, *NETWORKS[network], target]


def _run_until_killed(command, cwd, after_line: str, extra_delay: float) -> None:
    """Start ``command``; SIGKILL it ``extra_delay`` s after it prints a line starting with ``after_line``."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env=ENVIRONMENT,
    )
    for line in process.stdout:
        if line.startswith(after_line) or line.startswith("done ("):
            break
    time.sleep(extra_delay)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def _generations(run_dir) -> list[int]:
    with (run_dir / "metrics.csv").open(newline="") as stream:
        return [int(float(row["generation"])) for row in csv.DictReader(stream)]


@pytest.mark.parametrize("network", sorted(NETWORKS))
def test_kill_9_at_several_moments_then_resume_matches_the_uninterrupted_run(tmp_path, network):
    straight = tmp_path / "straight"
    subprocess.run(
        _command(straight, resume=False, network=network),
        check=True,
        capture_output=True,
        cwd=tmp_path,
        timeout=600,
        env=ENVIRONMENT,
    )

    killed = tmp_path / "killed"
    rng = random.Random(7)
    # Right after a generation's line (often before its checkpoint is written), and at
    # random moments inside later generations (in stepping, inference or a checkpoint write).
    moments = [
        ("gen    1", 0.0),
        ("gen    3", rng.uniform(0.0, 0.5)),
        ("gen    5", rng.uniform(0.0, 0.5)),
    ]

    def resumable() -> bool:
        # Killed before its first checkpoint, a run has nothing to resume: start it afresh.
        return bool(existing_checkpoints(killed))

    for line, delay in moments:
        _run_until_killed(_command(killed, resumable(), network), tmp_path, line, delay)
    assert resumable()
    finished = subprocess.run(
        _command(killed, resume=True, network=network),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        env=ENVIRONMENT,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]

    left, right = load_checkpoint(straight), load_checkpoint(killed)
    for key in ("generation", "counters", "last_eval", "algorithm", "normalizer"):
        assert same(left[key], right[key]), key
    assert _generations(killed) == list(range(1, GENERATIONS + 1))
    assert _generations(straight) == list(range(1, GENERATIONS + 1))
