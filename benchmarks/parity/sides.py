"""Running one side of a comparison for one seed, and reading back its training episodes.

Every side yields the same record: its training episodes' ``(env step, return, seconds
since start)`` (or, for neuroplug, its segments' mean return and episode count at their
last step), the run's wall time and env steps per second, the command, the versions and
the machine: the raw numbers the summary's statistics are computed from. A comparison's
``also`` measures (QD's coverage) come beside the points, one value per point.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite import Comparison, Side

REPO = Path(__file__).resolve().parents[2]
PEERS = Path(__file__).resolve().parent / "peers"
PYRIBS = Path(__file__).resolve().parents[1] / "peers" / "pyribs_qd.py"
"""pyribs' side, shared with ``benchmarks/quality_diversity.py``."""
CLEANRL_EPISODE = re.compile(r"global_step=(\d+), episodic_return=\[?([-0-9.e+]+)")
GENERATION = re.compile(
    r"evaluations=(\d+), population_mean=([-0-9.e+naninf]+), env_steps=(\d+), members=(\d+)"
)
"""A strategies peer's generation: evaluations so far, the population's mean return, env
steps so far, members evaluated."""
CHECKPOINT = re.compile(r"checkpoint step=(\d+)")
"""A resumable peer saved its state at this many env steps (``peers/sb3_learn.py``)."""
PEER_PACKAGES = (
    "torch", "gymnasium", "mujoco", "stable-baselines3", "sample-factory", "ribs", "numpy",
    "pettingzoo", "supersuit", "ale-py",
)  # fmt: skip


WHOLE_MACHINE = False
"""False: every side on one core (the suite's runs, two side by side on two cores). True:
each side with its own defaults on the whole machine, as a user runs it alone
(``speed.py --whole-machine``)."""


def run_environment() -> dict[str, str]:
    """The environment every side runs in: one thread for the math (``OMP_NUM_THREADS``),
    so each run holds one core, unless :data:`WHOLE_MACHINE`."""
    if WHOLE_MACHINE:
        return dict(os.environ)
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run_neuroplug(comparison: Comparison, side: Side, seed: int, work: Path) -> dict:
    """``python -m neuroplug`` for ``seed`` into ``work`` (continued from its last
    checkpoint where an earlier attempt stopped), read back from its ``metrics.csv``."""
    resuming = (work / "checkpoints").is_dir()
    if not resuming and work.exists():  # an attempt that stopped before its first checkpoint
        shutil.rmtree(work)
    command = [
        sys.executable, "-m", "neuroplug", *side.arguments,
        f"run.seed={seed}",
        *budget_overrides(comparison),
        "run.eval_interval=0",
        "run.stop_when_solved=false",
        *core_overrides(comparison, side),
        "logger=none",
        f"run.resume={work}" if resuming else f"run.output_dir={work}",
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(
        command, env=run_environment(), cwd=REPO, capture_output=True, text=True
    )
    process_seconds = time.monotonic() - started
    if result.returncode:
        raise RuntimeError(f"{' '.join(command[2:])} failed:\n{result.stderr[-3000:]}")
    rows = list(csv.DictReader((work / "metrics.csv").open()))
    # A whole run is timed as the peers' are, from the process's start (imports and env
    # creation included): its rows' clocks shift by what came before the first. A resumed
    # run's process saw only its last part: its rows' own clocks are kept.
    start_up = 0.0 if resuming else process_seconds - float(rows[-1]["elapsed"])
    # Our run's evaluations (its final one: the peers have none) are not training time:
    # its clock is `elapsed` less their running sum.
    spent = itertools.accumulate(float(row.get("eval_seconds") or 0) for row in rows)
    clock = [
        float(row["elapsed"]) - evaluated + start_up
        for row, evaluated in zip(rows, spent, strict=True)
    ]
    points, before = [], 0
    also = {name: [] for name in comparison.also}
    for row, at in zip(rows, clock, strict=True):  # metrics.csv counts episodes from the start
        played = int(float(row["episodes"]))
        value = metric_of(row, side.metric)
        if value is not None and played > before:
            x = played if comparison.unit == "evaluations" else int(float(row["env_steps"]))
            points.append([x, value, played - before, at])
            for name, values in also.items():
                values.append(metric_of(row, f"algo/{name}"))
        before = played
    return {
        "points": points,
        **({"also": also} if also else {}),
        "wall_seconds": clock[-1],
        "evaluation_seconds": float(rows[-1]["elapsed"]) + start_up - clock[-1],
        "env_steps": int(float(rows[-1]["env_steps"])),
        # The deployed policy's evaluation at the budget's end (run.eval_episodes greedy
        # episodes), beside the training episodes the score is read from: what a method
        # that deploys a champion (erl) is compared by.
        "final_evaluation": metric_of(rows[-1], "eval_return_mean"),
        "command": " ".join(["python", *command[1:-1]]),
        "versions": neuroplug_versions(),
    }


def metric_of(row: dict[str, str], metric: str) -> float | None:
    """A ``metrics.csv`` row's ``return_mean``, or its population's best member's
    objective (``best_member``); None where the row has none."""
    if metric == "best_member":
        objectives = [
            float(value) for key, value in row.items()
            if key.startswith("algo/member") and key.endswith("/objective") and value not in ("", "nan")
        ]  # fmt: skip
        return max(objectives) if objectives else None
    value = row.get(metric)
    return None if value in (None, "", "nan") else float(value)


LEARNERS = ("ppo", "appo", "dqn", "sac", "td3", "pbt")
"""Our algorithms that are learners (their torch threads are ``algo.torch_threads``)."""


def core_overrides(comparison: Comparison, side: Side) -> list[str]:
    """One core for our run as for the peers': a learner's torch threads, a strategy's
    serial scheduler (its episodes stepped in the run's own thread), and for an evolution
    algorithm that also learns by gradients (``cem_rl``, ``erl``, ``pga_me``) the backend's
    torch threads, which its learning uses; envs stepped in the run's process. None on the
    :data:`WHOLE_MACHINE`."""
    if WHOLE_MACHINE:
        return []
    # Gymnasium envs and PettingZoo's worlds would step in worker processes on the cores
    # the other runs hold.
    here = "env.vectorization=in_process"
    algo = next(arg.partition("=")[2] for arg in side.arguments if arg.startswith("algo="))
    if comparison.population:
        return ["scheduler=serial", here]
    if algo in LEARNERS:
        return ["algo.torch_threads=1", here]
    return ["scheduler=serial", "backend.torch_threads=1", here]


def budget_overrides(comparison: Comparison) -> list[str]:
    """Our run's budget: env steps, or a strategy's generations of its population."""
    population = [f"algo.population_size={comparison.population}"] if comparison.population else []
    if comparison.unit == "evaluations":
        return [f"run.max_generations={comparison.generations}", *population]
    return [f"run.max_frames={comparison.budget}", *population]


def run_cleanrl(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """One of CleanRL's scripts (from the checkout ``<peers>/cleanrl``, in the peers'
    venv ``<peers>/rl``) for ``seed``."""
    checkout, python = peers / "cleanrl", peers / "rl" / "bin" / "python"
    script = checkout / "cleanrl" / side.script
    command = [str(python), str(script), "--env-id", comparison.task, "--seed", str(seed)]
    command += ["--total-timesteps", str(comparison.budget), "--no-cuda", *side.arguments]
    record = printed_episodes(command, {"PYTHONPATH": str(checkout)}, comparison.budget)
    record["command"] = " ".join(["python", f"cleanrl/{side.script}", *command[2:]])
    record["versions"] = {"cleanrl": git_commit(checkout), **peer_versions(python)}
    return record


def run_sb3(comparison: Comparison, side: Side, seed: int, peers: Path, work: Path) -> dict:
    """Stable-Baselines3 (``peers/sb3_learn.py`` in the peers' venv ``<peers>/rl``) for
    ``seed``: ``side.script`` its algorithm, ``side.arguments`` its settings as JSON. It
    saves into ``work`` as it goes, and a run stopped part-way resumes from there."""
    python = peers / "rl" / "bin" / "python"
    learn = Path(__file__).resolve().parent / "peers" / "sb3_learn.py"
    command = [str(python), str(learn), "--algo", side.script, "--env", comparison.task]
    command += ["--steps", str(comparison.budget), "--seed", str(seed), *side.arguments]
    record = printed_episodes([*command, "--work", str(work / "sb3")], {}, comparison.budget, work)
    record["command"] = " ".join(["python", "benchmarks/parity/peers/sb3_learn.py", *command[2:]])
    record["versions"] = peer_versions(python)
    return record


def run_sb3_pettingzoo(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """Stable-Baselines3's PPO with one policy for every agent (``peers/sb3_pettingzoo.py``
    in ``<peers>/sb3ma``) for ``seed``: ``side.arguments`` its env and settings."""
    python = peers / "sb3ma" / "bin" / "python"
    learn = PEERS / "sb3_pettingzoo.py"
    command = [str(python), str(learn), "--steps", str(comparison.budget), "--seed", str(seed)]
    record = printed_episodes([*command, *side.arguments], {}, comparison.budget)
    record["command"] = " ".join(
        ["python", "benchmarks/parity/peers/sb3_pettingzoo.py", *command[2:], *side.arguments]
    )
    record["versions"] = peer_versions(python)
    return record


MA_EPISODE = re.compile(r"global_step=(\d+), episode_length=(\d+)")
"""An episode as ``peers/cleanrl_ma_atari.py`` prints it (CleanRL's script prints the
returns alone)."""


def run_cleanrl_ma_atari(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """CleanRL's multi-agent Atari script (``side.script``, from ``<peers>/cleanrl``) run by
    ``peers/cleanrl_ma_atari.py`` in ``<peers>/pzma`` for ``seed``: each training episode a
    point of its length at the agent steps so far."""
    python = peers / "pzma" / "bin" / "python"
    script = peers / "cleanrl" / "cleanrl" / side.script
    command = [str(python), str(PEERS / "cleanrl_ma_atari.py"), str(script)]
    command += ["--env-id", comparison.task, "--seed", str(seed), "--total-timesteps"]
    command += [str(comparison.budget), "--cuda", "False", *side.arguments]
    record = printed(command, {}, MA_EPISODE)
    del record["steps_at"]
    record["env_steps"] = comparison.budget
    record["command"] = " ".join(
        ["python", "benchmarks/parity/peers/cleanrl_ma_atari.py", f"cleanrl/{side.script}",
         *command[3:]]
    )  # fmt: skip
    record["versions"] = {"cleanrl": git_commit(peers / "cleanrl"), **peer_versions(python)}
    return record


def run_sample_factory(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """Sample Factory's APPO (``peers/sf_learn.py`` in ``<peers>/sf``) for ``seed``:
    ``side.arguments`` its settings, one serial process (one core)."""
    python = peers / "sf" / "bin" / "python"
    learn = PEERS / "sf_learn.py"
    command = [str(python), str(learn), "--env", comparison.task, "--seed", str(seed)]
    command += ["--steps", str(comparison.budget), *side.arguments]
    record = printed_episodes(command, {}, comparison.budget)
    record["command"] = " ".join(["python", "benchmarks/parity/peers/sf_learn.py", *command[2:]])
    record["versions"] = peer_versions(python)
    return record


def run_evotorch(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """EvoTorch's ``side.script`` (``peers/evotorch_search.py`` in ``<peers>/evotorch``)."""
    return strategy_peer(comparison, side, seed, peers / "evotorch", "evotorch_search.py")


def run_pycma(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """pycma's CMA-ES (``peers/pycma_search.py`` in ``<peers>/cma``)."""
    return strategy_peer(comparison, side, seed, peers / "cma", "pycma_search.py")


def run_pyribs(comparison: Comparison, side: Side, seed: int, peers: Path) -> dict:
    """pyribs (``benchmarks/peers/pyribs_qd.py`` in ``<peers>/ribs``) for ``seed``: each
    generation's QD-score a point at its evaluations, the comparison's ``also`` (coverage)
    beside."""
    python = peers / "ribs" / "bin" / "python"
    command = [str(python), str(PYRIBS), "--env", comparison.task, "--seed", str(seed)]
    command += ["--batch", str(comparison.population)]
    command += ["--generations", str(comparison.generations), *side.arguments]
    started = time.monotonic()
    result = subprocess.run(command, env=run_environment(), capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode:
        raise RuntimeError(f"pyribs_qd.py failed:\n{result.stderr[-3000:]}")
    run = json.loads(result.stdout.strip().splitlines()[-1])
    # The script times its generations alone: its clock shifts by its start-up, so the
    # run is timed from the process's start as every other side's.
    start_up = seconds - run["seconds"]
    points, before = [], 0
    for generation in run["curve"]:
        played = generation["evaluations"]
        points.append(
            [played, generation["qd_score"], played - before, generation["seconds"] + start_up]
        )
        before = played
    return {
        "points": points,
        "also": {
            name: [generation[name] for generation in run["curve"]] for name in comparison.also
        },
        "wall_seconds": seconds,
        "env_steps": run["steps"],
        "command": " ".join(["python", "benchmarks/peers/pyribs_qd.py", *command[2:]]),
        "versions": peer_versions(python),
    }


def strategy_peer(comparison: Comparison, side: Side, seed: int, venv: Path, name: str) -> dict:
    """A strategies peer's script for ``seed``: its generations as points at their
    evaluation counts."""
    python, script = venv / "bin" / "python", PEERS / name
    command = [str(python), str(script), "--env", comparison.task, "--seed", str(seed)]
    command += ["--population", str(comparison.population), *side.arguments]
    if comparison.unit == "env_steps":  # a budget of env steps (the GA's elite rounds differ)
        command += ["--generations", str(10**9), "--steps", str(comparison.budget)]
    else:
        command += ["--generations", str(comparison.generations)]
    record = printed(command, {}, GENERATION)
    if comparison.unit == "env_steps":
        record["points"] = [
            [steps, *rest]
            for (_, *rest), steps in zip(record["points"], record.pop("steps_at"), strict=True)
        ]
    else:
        record.pop("steps_at")
    record["command"] = " ".join(["python", f"benchmarks/parity/peers/{name}", *command[2:]])
    record["versions"] = peer_versions(python)
    return record


def printed_episodes(
    command: list[str], environment: dict[str, str], steps: int, work: Path | None = None
) -> dict:
    """A learner peer's ``command``: each training episode it prints (``global_step=..,
    episodic_return=..``) a point at its step (CleanRL prints the 0-based index); ``work``:
    where a resumable peer's progress is kept (:func:`printed`)."""
    record = printed(command, environment, CLEANRL_EPISODE, work)
    del record["steps_at"]
    record["points"] = [[step + 1, value, 1, at] for step, value, _, at in record["points"]]
    record["env_steps"] = steps
    return record


def printed(
    command: list[str],
    environment: dict[str, str],
    pattern: re.Pattern,
    work: Path | None = None,
) -> dict:
    """Run a peer's ``command`` on one thread in a scratch working dir (its ``runs/`` and
    ``videos/`` go with it); each line ``pattern`` matches, timed as it arrives, is a point
    ``[x, return, weight, seconds]`` (``pattern``'s groups: x, return, and optionally env
    steps so far and the point's weight). With ``work``, a resumable peer's: each time it
    prints that it saved (:data:`CHECKPOINT`), the points and seconds so far are kept in
    ``work/progress.json``, and a run that finds them goes on from them (the peer resumes
    from its own save; the points and time after that save are redone, and
    ``resumed_at`` lists the steps it resumed at)."""
    progress = work / "progress.json" if work is not None else None
    kept = json.loads(progress.read_text()) if progress and progress.is_file() else None
    points: list[list[float]] = kept["points"] if kept else []
    steps, steps_at = (kept["steps"], kept["steps_at"]) if kept else (0, [])
    before = kept["seconds"] if kept else 0.0
    resumed_at = [*kept["resumed_at"], kept["saved_at"]] if kept else []
    with tempfile.TemporaryDirectory() as scratch:
        # stderr goes to a file: a peer that logs there (Sample Factory) would otherwise
        # fill the pipe while stdout is read, and wait on it forever.
        errors = Path(scratch) / "stderr.txt"
        started = time.monotonic()
        with errors.open("w") as stderr:
            process = subprocess.Popen(
                command, cwd=scratch, env={**run_environment(), **environment}, text=True,
                stdout=subprocess.PIPE, stderr=stderr,
            )  # fmt: skip
            for line in process.stdout:
                match = pattern.search(line)
                if match:
                    x, value, *rest = match.groups()
                    weight = float(rest[1]) if len(rest) > 1 else 1
                    seconds = before + time.monotonic() - started
                    points.append([int(x), float(value), weight, seconds])
                    steps = int(rest[0]) if rest else steps
                    steps_at.append(steps)
                saved = CHECKPOINT.search(line)
                if saved and progress is not None:
                    kept = {
                        "points": points, "steps": steps, "steps_at": steps_at,
                        "seconds": before + time.monotonic() - started,
                        "saved_at": int(saved.group(1)), "resumed_at": resumed_at,
                    }  # fmt: skip
                    progress.with_suffix(".tmp").write_text(json.dumps(kept))
                    progress.with_suffix(".tmp").replace(progress)
            failed = process.wait()
        seconds = before + time.monotonic() - started
        if failed:
            error = errors.read_text()
            raise RuntimeError(f"{Path(command[1]).name} failed:\n{error[-3000:]}")
    record = {"points": points, "wall_seconds": seconds, "env_steps": steps, "steps_at": steps_at}
    return {**record, "resumed_at": resumed_at} if resumed_at else record


RESUMABLE = {"neuroplug", "sb3"}
"""The sides whose runs keep their progress in a work dir and resume from it."""

RUNNERS = {
    "neuroplug": run_neuroplug,
    "cleanrl": run_cleanrl,
    "sb3": run_sb3,
    "sb3_pettingzoo": run_sb3_pettingzoo,
    "cleanrl_ma_atari": run_cleanrl_ma_atari,
    "evotorch": run_evotorch,
    "pycma": run_pycma,
    "sample_factory": run_sample_factory,
    "pyribs": run_pyribs,
}
"""Side name -> how to run it."""


def neuroplug_versions() -> dict[str, str]:
    """neuroplug's commit and the versions that decide its numbers."""
    import torch

    return {"neuroplug": git_commit(REPO), "torch": torch.__version__, **package_versions()}


def package_versions() -> dict[str, str]:
    """This interpreter's versions of :data:`PEER_PACKAGES` and envpool, where installed."""
    from importlib import metadata

    found = {}
    for name in (*PEER_PACKAGES, "envpool"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def peer_versions(python: Path) -> dict[str, str]:
    """The peers' venv's versions of :data:`PEER_PACKAGES`."""
    code = (
        "import json\nfrom importlib import metadata\nfound = {}\n"
        f"for name in {PEER_PACKAGES!r}:\n"
        "    try:\n        found[name] = metadata.version(name)\n"
        "    except metadata.PackageNotFoundError:\n        pass\nprint(json.dumps(found))\n"
    )
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def git_commit(path: Path) -> str:
    """The checkout's commit (with ``+changes`` where its tree differs from it)."""
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    return head + ("+changes" if dirty else "")
