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
exec "$venv/bin/python" -m pytest -q "$@"
