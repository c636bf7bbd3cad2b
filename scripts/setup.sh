#!/usr/bin/env bash
# Idempotent set-up: a virtualenv in .venv with neuroplug (editable) and its dependencies.
#   bash scripts/setup.sh          # runtime only
#   bash scripts/setup.sh --test   # plus pytest, ruff, mkdocs with mkdocstrings, triton (the Triton noise check), ray, rliable (tools.compare), onnx and onnxruntime (tools.export), transformers, pettingzoo and mpe2
# NEUROPLUG_PYTHON picks the interpreter (default python3); NEUROPLUG_TORCH the torch
# version installed when the venv has none (default 2.13.0: pinned because an unpinned
# torch on a CPU-only machine pulls several GB of CUDA packages).
#
# Once set up, a call costs a few milliseconds and needs no network: a stamp in the venv
# records what was installed, for which pyproject.toml and this script, and pip runs again
# only when one of them changed (or the venv is gone).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${NEUROPLUG_PYTHON:-python3}
venv=${NEUROPLUG_VENV:-.venv}
mode=runtime
if [ "${1:-}" = "--test" ]; then
  mode=test
fi
stamp="$venv/.neuroplug-setup"
fingerprint="$(cat pyproject.toml plugins/neuroplug-cem/pyproject.toml scripts/setup.sh | cksum | cut -d' ' -f1)"
# A test set-up includes the runtime one.
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] &&
  { grep -qx "test $fingerprint" "$stamp" || grep -qx "$mode $fingerprint" "$stamp"; }; then
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
"$venv/bin/python" -c "import torch" 2>/dev/null || "${pip[@]}" "torch==${NEUROPLUG_TORCH:-2.13.0}"
# hatchling: the build backend, also for the test that builds neuroplug's wheels offline.
"${pip[@]}" hatchling
if [ "$mode" = test ]; then
  "${pip[@]}" -e ".[test,video,sweep,triton,ray,ray-sweep,docs,compare,export,hf,multiagent]"
  # The example third-party plugin, installed as a user would: algo=cem and its tests run.
  "${pip[@]}" --no-deps -e plugins/neuroplug-cem
else
  "${pip[@]}" -e .
fi
echo "$mode $fingerprint" >> "$stamp"
