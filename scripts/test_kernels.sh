#!/usr/bin/env bash
# The tests marked `kernels` (their outcome rests on which CPU kernels PyTorch, oneDNN and
# MKL pick: bit-equality across batches, threads and schedulers; reduced precision), run
# again under narrower instruction sets than this CPU's, so an AVX-512 or AMX machine shows
# what an AVX2-only one would:
#   ATEN_CPU_CAPABILITY=avx2 with ONEDNN_MAX_CPU_ISA=AVX2, on every x86-64 CPU;
#   ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 too, on a CPU with AMX (oneDNN's AMX paths off).
#   bash scripts/test_kernels.sh [pytest args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh --test
venv="${NEUROPLUG_VENV:-.venv}"
cores='import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())'
workers="${NEUROPLUG_TEST_WORKERS:-$("$venv/bin/python" -c "$cores" | awk '{print ($1 < 4) ? $1 : 4}')}"
narrower() {
  echo "kernels-marked tests under $*"
  env "$@" "$venv/bin/python" -m pytest -q -m kernels -n "$workers" --dist loadfile \
    -p no:cacheprovider -o addopts="" "${extra[@]}"
}
extra=("$@")
if [ "$(uname -m)" != "x86_64" ]; then
  echo "kernels-marked tests: no narrower instruction set to try on $(uname -m)"
  exit 0
fi
narrower ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
if grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
  narrower ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16
fi
