"""A parity comparison's speed alone: every side at a short budget, one thread each (or
each with its own defaults on the whole machine: ``--whole-machine``), taking turns, on a
machine with nothing else running (pause or stop the suite's runs first).

    python benchmarks/parity/speed.py --only ppo/pong_v3 --steps 49152 --rounds 2 \\
        --peers ~/.cache/neuroplug-parity

Each side's run is the parity suite's (:mod:`sides`: the same commands, one thread unless
``--whole-machine``, start-up included in its wall time, our final evaluation not) at
``--steps`` env steps instead of the comparison's budget; the sides run in turn,
``--rounds`` times, and each side's env steps per second are reported with their ratio to
the first reference's, in ``results/parity/<method>/<task>/speed_<one_thread or
whole_machine>_<date>.md`` (``--out`` for another name; its ``.json`` beside it, with each
run). ``speed_alone.json`` there names the latest sitting of each kind: the parity
summary shows that one-thread sitting's speeds instead of the suite's own, which its runs
record beside whatever else the machine was doing.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

import sides  # noqa: E402
from machine import describe  # noqa: E402
from suite import select  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "parity"
INDEX = "speed_alone.json"
"""Per comparison folder: the latest sitting of each kind (``one_thread``,
``whole_machine``), by file name."""


def unused(folder: Path, stem: str) -> Path:
    """The first of ``stem.md``, ``stem_2.md``, ... not yet written: a second sitting on
    the same day keeps the first."""
    names = (f"{stem}.md", *(f"{stem}_{again}.md" for again in range(2, 1000)))
    return next(folder / name for name in names if not (folder / name).exists())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="one method/task key")
    parser.add_argument("--steps", type=int, required=True, help="env steps a run")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--sides", nargs="*", default=None,
        help="the sides to time (default: all; an ablation runs at our speed)",
    )  # fmt: skip
    parser.add_argument("--peers", type=Path, default=Path.home() / ".cache" / "neuroplug-parity")
    parser.add_argument(
        "--out", type=Path, default=None,
        help="a .md; its .json beside it (default: the comparison's folder, "
        "speed_<one_thread or whole_machine>_<date>.md, named in its speed_alone.json)",
    )  # fmt: skip
    parser.add_argument(
        "--whole-machine", action="store_true",
        help="each side with its own thread defaults on every core, not on one thread",
    )  # fmt: skip
    parser.add_argument(
        "--ours", nargs="*", default=[],
        help="more overrides for our sides, e.g. run.eval_episodes=1 (a shorter final "
        "evaluation: its time is left out of the speed, but not out of the wait)",
    )  # fmt: skip
    arguments = parser.parse_args()
    sides.WHOLE_MACHINE = arguments.whole_machine
    cores = (
        f"each side with its own defaults on all {os.cpu_count()} cores"
        if arguments.whole_machine
        else "each side on one thread"
    )
    [comparison] = select([arguments.only])
    kind = "whole_machine" if arguments.whole_machine else "one_thread"
    today = datetime.date.today().isoformat()
    out = arguments.out or unused(RESULTS / comparison.key, f"speed_{kind}_{today}")
    short = dataclasses.replace(comparison, budget=arguments.steps)
    names = arguments.sides or [side.name for side in short.sides]
    if set(names) - {side.name for side in short.sides} or short.ours.name not in names:
        listed = ", ".join(side.name for side in short.sides)
        parser.error(f"--sides: {comparison.key} has {listed} (ours and a reference needed)")
    chosen = [side for side in short.sides if side.name in names]
    runs: dict[str, list[dict]] = {side.name: [] for side in chosen}
    for _ in range(arguments.rounds):
        for side in chosen:
            runner = sides.RUNNERS[side.runs_with]
            with tempfile.TemporaryDirectory() as scratch:
                work = Path(scratch) / "run"
                if side.runs_with == "neuroplug":
                    ours = dataclasses.replace(side, arguments=(*side.arguments, *arguments.ours))
                    record = runner(short, ours, arguments.seed, work)
                elif side.runs_with in sides.RESUMABLE:
                    work.mkdir()
                    record = runner(short, side, arguments.seed, arguments.peers, work)
                else:
                    record = runner(short, side, arguments.seed, arguments.peers)
                shutil.rmtree(work, ignore_errors=True)
            speed = record["env_steps"] / record["wall_seconds"]
            runs[side.name].append(
                {"env_steps": record["env_steps"], "wall_seconds": record["wall_seconds"],
                 "evaluation_seconds": record.get("evaluation_seconds", 0.0),
                 "steps_per_second": speed, "command": record["command"]}
            )  # fmt: skip
            print(f"{side.name}: {speed:.1f} env steps/s", flush=True)
    reference = next(side.name for side in chosen if side is not short.ours)
    theirs = statistics.median(run["steps_per_second"] for run in runs[reference])
    lines = [
        f"# {comparison.key}: speed, each side alone",
        "",
        f"Machine: {describe()}. {cores.capitalize()}, {arguments.steps:,} env steps a "
        f"run (start-up included; our final evaluation not: the peers have none), seed "
        f"{arguments.seed}, {arguments.rounds} rounds taking turns, nothing else running "
        f"(`python benchmarks/parity/speed.py{' --whole-machine' * arguments.whole_machine}"
        f"{' --ours ' + ' '.join(arguments.ours) if arguments.ours else ''}"
        f"{' --sides ' + ' '.join(arguments.sides) if arguments.sides else ''}`).",
        "",
        f"| side | env steps / s (median; each run) | beside {reference} |",
        "|---|---|---|",
    ]
    for name, each in runs.items():
        speeds = [run["steps_per_second"] for run in each]
        median = statistics.median(speeds)
        listed = ", ".join(f"{speed:.1f}" for speed in speeds)
        lines.append(f"| {name} | {median:.1f} ({listed}) | {median / theirs:.2f}x |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    record = {
        "comparison": comparison.key, "steps": arguments.steps, "machine": describe(),
        "whole_machine": arguments.whole_machine, "seed": arguments.seed,
        "commit": sides.git_commit(sides.REPO),
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }  # fmt: skip
    out.with_suffix(".json").write_text(json.dumps({**record, "runs": runs}, indent=1) + "\n")
    if out.parent == RESULTS / comparison.key:
        index = out.parent / INDEX
        latest = json.loads(index.read_text()) if index.is_file() else {}
        index.write_text(
            json.dumps({**latest, kind: out.with_suffix(".json").name}, indent=1) + "\n"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
