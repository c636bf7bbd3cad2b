#!/usr/bin/env bash
# The low-rank (EGGROLL-style) ES peers of benchmarks/peers/{torcheggroll,evox}_forward.py,
# each in its own venv under one folder (default ~/.cache/neuroplug-eggroll-peers):
#   torcheggroll/  torcheggroll 0.2.0, torch 2.13.0 (the CPU build), numpy (quiets torch's
#                  warning)
#   evox/          EvoX 1.4.0 (its first release with VirtualLoRAES; numpy comes with it),
#                  torch 2.13.0 (the CPU build)
# torch goes in first, pinned, so that neither peer's "torch>=" pulls a CUDA build.
# Usage: bash benchmarks/peers/eggroll_peers.sh [DIR]
set -euo pipefail
peers="${1:-$HOME/.cache/neuroplug-eggroll-peers}"
mkdir -p "$peers"
if [ ! -x "$peers/torcheggroll/bin/python" ]; then
  python3.11 -m venv "$peers/torcheggroll"
  "$peers/torcheggroll/bin/pip" install --quiet torch==2.13.0
  "$peers/torcheggroll/bin/pip" install --quiet torcheggroll==0.2.0 numpy
fi
if [ ! -x "$peers/evox/bin/python" ]; then
  python3.11 -m venv "$peers/evox"
  "$peers/evox/bin/pip" install --quiet torch==2.13.0
  "$peers/evox/bin/pip" install --quiet evox==1.4.0
fi
echo "peers ready in $peers"
