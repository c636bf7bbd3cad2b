"""Median frames/s per (task, learner) of the old and the new tree, and their ratio, from
run.sh's JSON files: ``python summarize.py DIR`` writes DIR/summary.json."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main() -> None:
    folder = Path(sys.argv[1])
    rates: dict[tuple[str, str, str], list[float]] = {}
    machine = None
    for path in sorted(folder.glob("*_*_*.json")):
        bench, tree, _ = path.stem.split("_")
        report = json.loads(path.read_text())
        machine = machine or report.get("machine")
        if bench == "learners":
            for row in report["throughput"]:
                if row["what"] in ("ppo", "appo", "dqn"):
                    key = (tree, row["task"], row["what"])
                    rates.setdefault(key, []).append(row["frames_per_second"])
        else:
            for what in ("pbt", "one_ppo"):
                key = (tree, "cartpole", f"{what} (pbt.py)")
                rates.setdefault(key, []).append(report[what]["frames_per_second"])
    rows = []
    for (tree, task, what), values in sorted(rates.items()):
        if tree != "new":
            continue
        old = statistics.median(rates[("old", task, what)])
        new = statistics.median(values)
        rows.append(
            {
                "task": task,
                "what": what,
                "old_frames_per_second": rates[("old", task, what)],
                "new_frames_per_second": values,
                "ratio_of_medians": new / old,
            }
        )
    summary = {"machine": machine, "rows": rows}
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    for row in rows:
        print(f"{row['task']:9} {row['what']:16} new/old {row['ratio_of_medians']:.3f}")


if __name__ == "__main__":
    main()
