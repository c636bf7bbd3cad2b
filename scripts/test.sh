#!/usr/bin/env bash
# Set up (first time only), lint, check the layers, build the docs, and run the whole test suite:
#   bash scripts/test.sh [pytest args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh --test
venv="${NEUROPLUG_VENV:-.venv}"
"$venv/bin/ruff" check .
"$venv/bin/ruff" format --check .
# The import layers and plugin independence drawn in .importlinter.
"$venv/bin/lint-imports"
# The docs site: a broken link, a missing anchor or a page left out of the nav fails here
# (not with --quiet, which hides the warnings strict mode counts).
NO_MKDOCS_2_WARNING=1 "$venv/bin/mkdocs" build --strict --site-dir "$(mktemp -d)"
# One pytest-xdist worker per core (at most 4), a test file to a worker: its module
# fixtures run once. 2 workers on 2 cores: 12:58 against 21:46 in one process (Xeon model
# 167). NEUROPLUG_TEST_WORKERS=0 runs in one process; later pytest args (-n 0) win too.
cores='import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())'
workers="${NEUROPLUG_TEST_WORKERS:-$("$venv/bin/python" -c "$cores" | awk '{print ($1 < 4) ? $1 : 4}')}"
exec "$venv/bin/python" -m pytest -q -n "$workers" --dist loadfile "$@"
