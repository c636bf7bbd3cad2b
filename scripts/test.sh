#!/usr/bin/env bash
# Set up (first time only), lint, check the layers, and run the whole test suite:
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
exec "$venv/bin/python" -m pytest -q "$@"
