#!/usr/bin/env bash
# Set up (first time only) and train: bash scripts/run.sh algo=es env=breakout [overrides...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
exec "$root/${NEUROPLUG_VENV:-.venv}/bin/python" -m neuroplug "$@"
