"""The machine a benchmark ran on, as every result file names it.

The machines differ from session to session (AMD EPYC with AVX2 or AVX-512, Intel Xeon
with AVX-512 and AMX), and a ratio holds for the CPU it was measured on, so each script
that writes a result calls :func:`describe`::

    from machine import describe        # scripts run as python benchmarks/<name>.py

    print(describe())  # AMD EPYC 9R14, 2 cores; AVX2, AVX-512, AVX512-BF16; torch: AVX512
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

INSTRUCTION_SETS = {
    "avx2": "AVX2",
    "avx512f": "AVX-512",
    "avx512_bf16": "AVX512-BF16",
    "amx_tile": "AMX",
    "asimd": "NEON",
    "sve": "SVE",
}
"""``/proc/cpuinfo`` flags -> the instruction sets that decide which kernels the libraries
run (and so a result's speed and its last bits)."""


def cpu_model() -> str:
    """The CPU's model name with its family and model numbers (Linux's ``/proc/cpuinfo``;
    a virtual machine may name only "AMD EPYC", where family 25 model 17 is Zen 4), else
    what ``platform`` knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return platform.processor() or platform.machine()
    fields: dict[str, str] = {}
    for line in cpuinfo.read_text().splitlines():
        if not line.strip():
            break  # the first processor's fields are enough
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name") or fields.get("Model") or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def instruction_sets() -> list[str]:
    """The instruction sets of :data:`INSTRUCTION_SETS` this CPU has (Linux), else []."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        return []
    flags: set[str] = set()
    for line in cpuinfo.read_text().splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.split(":", 1)[1].split())
            break
    return [name for flag, name in INSTRUCTION_SETS.items() if flag in flags]


def describe() -> str:
    """CPU model, core count, instruction sets and the kernels PyTorch dispatches to."""
    text = f"{cpu_model()}, {os.cpu_count()} cores"
    found = instruction_sets()
    if found:
        text += f"; {', '.join(found)}"
    try:
        import torch

        text += f"; torch {torch.__version__} kernels: {torch.backends.cpu.get_cpu_capability()}"
    except ImportError:
        pass
    return text
