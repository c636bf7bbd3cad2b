"""APPO on CartPole over long segments, old tree against new (issue 46, item 7).

The 2-second segments of ``benchmarks/learners.py --parts throughput`` spread by up to 10%
for APPO; this runs ``--segments`` segments of ``--steps`` env steps each in one process
(the first, with the learner's start-up, reported apart) with the settings that script
uses, imported from the tree on ``PYTHONPATH``:

    PYTHONPATH=TREE:TREE/plugins python appo_cartpole.py TREE --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("tree", type=Path)
parser.add_argument("--steps", type=int, default=65536)
parser.add_argument("--segments", type=int, default=4)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.tree / "benchmarks"))

from learners import SETTINGS, _compose  # noqa: E402
from neuroplug.config_store import register_schemas  # noqa: E402

from neuroplug.experiment import typed_experiment  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

register_schemas()
overrides = [*SETTINGS[("appo", "cartpole")], f"algo.segment_steps={args.steps}", "logger=none"]
parts = build_components(typed_experiment(_compose(overrides)))
rows = []
for index in range(args.segments):
    started = time.perf_counter()
    segment = parts.algorithm.train_segment()
    wall = time.perf_counter() - started
    rows.append({"segment": index + 1, "frames": segment.frames, "seconds": wall})
    print(rows[-1], flush=True)
parts.algorithm.close()
steady = rows[1:]
fps = sum(row["frames"] for row in steady) / sum(row["seconds"] for row in steady)
args.out.write_text(json.dumps({"tree": str(args.tree), "rows": rows, "frames_per_second": fps}))
print(f"frames/s after the first segment: {fps:.0f}")
