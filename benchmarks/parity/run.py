"""The parity suite: every method beside its reference implementation, over seeds.

    python benchmarks/parity/run.py --peers ~/.cache/neuroplug-parity        # everything left
    python benchmarks/parity/run.py --only sac td3/Hopper-v4 --peers DIR     # some of it
    python benchmarks/parity/run.py --list                                   # what is done, what is left
    nohup nice -n 19 python benchmarks/parity/run.py --peers DIR > parity.log 2>&1 &

Each run (a method, a task, a side, a seed) writes its raw numbers to
``benchmarks/results/parity/<method>/<task>/<side>/seed<k>.json`` when it finishes; a run
whose file exists is skipped, so the suite resumes where it stopped (a neuroplug run
interrupted mid-way continues from its last checkpoint, kept under
``results/parity/.work/``, ignored by git, as does a Stable-Baselines3 run, from its last
save there: its env starts new episodes, and the record's ``resumed_at`` says where). The
sides of a comparison take turns seed by seed, so both see the same load on a shared
machine. Peers run in their own venvs, made by
``benchmarks/parity/peers.sh`` under ``--peers``. ``--tree`` runs neuroplug from another
checkout (a snapshot of a commit: the working tree can change while the suite runs).
Then ``python benchmarks/parity/summary.py`` writes the statistics.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import sides  # noqa: E402
from machine import describe  # noqa: E402
from suite import Comparison, select  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "parity"


def record_path(comparison: Comparison, side: str, seed: int, root: Path | None = None) -> Path:
    """Where one run's raw numbers are kept (another comparison's, for a side whose runs
    are that one's)."""
    root = RESULTS if root is None else root
    origin = next(each for each in comparison.sides if each.name == side).records_from
    folder = root / origin if origin else root / comparison.method / comparison.task / side
    return folder / f"seed{seed}.json"


def pending(comparisons: list[Comparison]) -> list[tuple[Comparison, str, int]]:
    """The runs without a record, seed by seed, the sides of a seed next to each other."""
    runs, paths = [], set()
    for comparison in comparisons:
        for seed in comparison.seeds:
            for side in comparison.sides:
                path = record_path(comparison, side.name, seed)
                if not path.is_file() and path not in paths:  # a shared side runs once
                    runs.append((comparison, side.name, seed))
                    paths.add(path)
    return runs


class LoadSampler:
    """The machine's 1-minute load average, every ``interval`` seconds while a run goes: a
    mean above the cores says the run's speed was measured beside other work (a floor)."""

    def __init__(self, interval: float = 15.0) -> None:
        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.interval):
                return

    def summary(self) -> dict[str, float]:
        """The samples' mean and max, and the cores."""
        return {
            "mean": float(sum(self.samples) / len(self.samples)),
            "max": float(max(self.samples)),
            "cores": len(os.sched_getaffinity(0)),
        }


def run_one(comparison: Comparison, side_name: str, seed: int, peers: Path) -> Path:
    """Run one side for one seed and write its record (with the machine's load meanwhile)."""
    side = next(side for side in comparison.sides if side.name == side_name)
    runner = sides.RUNNERS[side.runs_with]
    work = RESULTS / ".work" / comparison.method / comparison.task / side.name / f"seed{seed}"
    with LoadSampler() as load:
        if side.runs_with == "neuroplug":
            record = runner(comparison, side, seed, work)
        elif side.runs_with in sides.RESUMABLE:
            work.mkdir(parents=True, exist_ok=True)
            record = runner(comparison, side, seed, peers, work)
        else:
            record = runner(comparison, side, seed, peers)
        # Its checkpoints (a replay buffer among them) are not results.
        shutil.rmtree(work, ignore_errors=True)
    record = {
        "method": comparison.method,
        "task": comparison.task,
        "side": side.name,
        "seed": seed,
        "unit": comparison.unit,
        "budget": comparison.budget,
        "bin": comparison.bin,
        **record,
        "steps_per_second": record["env_steps"] / record["wall_seconds"],
        "load_average": load.summary(),
        "machine": describe(),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    path = record_path(comparison, side.name, seed)
    if side.records_from:  # the record is that comparison's: written as its own
        origin_method, origin_task, origin_side = side.records_from.split("/")
        record.update(method=origin_method, task=origin_task, side=origin_side)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(record, indent=1) + "\n")
    path.with_suffix(".tmp").replace(path)  # a record is whole or absent
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="methods or method/task keys (default: all)")
    parser.add_argument("--peers", type=Path, default=Path.home() / ".cache" / "neuroplug-parity")
    parser.add_argument("--tree", type=Path, default=None, help="neuroplug checkout to run")
    parser.add_argument(
        "--sides",
        nargs="*",
        help="only these sides (neuroplug, cleanrl, ...): two processes on one comparison "
        "split by side never run the same seed twice",
    )
    parser.add_argument(
        "--seeds",
        nargs="*",
        type=int,
        help="only these seeds: two processes on one side split by seed never meet",
    )
    parser.add_argument("--list", action="store_true", help="print what is left and stop")
    arguments = parser.parse_args(argv)
    runs = pending(select(arguments.only))
    if arguments.sides:
        runs = [run for run in runs if run[1] in arguments.sides]
    if arguments.seeds:
        runs = [run for run in runs if run[2] in arguments.seeds]
    if arguments.list:
        for comparison, side, seed in runs:
            print(f"{comparison.key} {side} seed {seed}")
        print(f"{len(runs)} runs left")
        return
    if arguments.tree is not None:
        tree = arguments.tree.resolve()
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(tree), str(tree / "plugins"), os.environ.get("PYTHONPATH", "")]
        )
        sides.REPO = tree
    failed = 0
    for index, (comparison, side, seed) in enumerate(runs, 1):
        started = time.monotonic()
        print(f"[{index}/{len(runs)}] {comparison.key} {side} seed {seed}", flush=True)
        if record_path(comparison, side, seed).is_file():  # another process ran it meanwhile
            print("  done meanwhile: skipped", flush=True)
            continue
        try:
            path = run_one(comparison, side, seed, arguments.peers)
        except Exception:  # one failed run does not stop the others; its record stays absent
            failed += 1
            traceback.print_exc()
            continue
        print(f"  {time.monotonic() - started:.0f} s -> {path.relative_to(RESULTS)}", flush=True)
    if failed:
        raise SystemExit(f"{failed} runs failed (above); run again to retry them")


if __name__ == "__main__":
    main()
