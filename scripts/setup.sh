#!/usr/bin/env bash
# Idempotent set-up: a virtualenv in .venv with neuroplug (editable) and its dependencies.
#   bash scripts/setup.sh          # runtime only
#   bash scripts/setup.sh --test   # plus pytest, ruff, triton (the Triton noise check) and ray
# NEUROPLUG_PYTHON picks the interpreter (default python3); NEUROPLUG_TORCH the torch
# version installed when the venv has none (default 2.13.0: pinned because an unpinned
# torch on a CPU-only machine pulls several GB of CUDA packages).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${NEUROPLUG_PYTHON:-python3}
venv=${NEUROPLUG_VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"$venv/bin/python" -c "import torch" 2>/dev/null || "${pip[@]}" "torch==${NEUROPLUG_TORCH:-2.13.0}"
# hatchling: the build backend, also for the test that builds neuroplug's wheels offline.
"${pip[@]}" hatchling
if [ "${1:-}" = "--test" ]; then
  "${pip[@]}" -e ".[test,video,sweep,triton,ray,ray-sweep]"
else
  "${pip[@]}" -e .
fi
