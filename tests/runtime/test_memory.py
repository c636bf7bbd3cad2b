"""The C allocator keeps freed tensors' memory: a step that gathers a population's states
and writes them back (lockstep's pattern, a KV cache a row) soon stops faulting its pages
in afresh (glibc; elsewhere nothing is changed), and the opt-out leaves glibc's defaults,
where every step faults them in."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, resource, torch
from neuroplug.runtime.memory import keep_freed_memory
kept = keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
states = torch.zeros(1024, 26625)  # 104 MiB, above any mmap threshold of glibc's
rows = torch.arange(1024)
before = faults()
for _ in range(12):
    gathered = states[rows]  # a new tensor each step, as lockstep's gather of live lanes
    states[rows] = gathered + 1  # and another
    del gathered
print(json.dumps({"kept": kept, "faults": faults() - before}))
"""
TENSOR_PAGES = 1024 * 26625 * 4 // 4096


def _probe(**environment) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **environment},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(result.stdout.splitlines()[-1])


def test_a_step_s_large_tensors_stop_faulting_their_pages_in_afresh():
    kept = _probe()
    if not kept["kept"]:
        pytest.skip("not glibc's allocator: nothing to keep")
    returned = _probe(NEUROPLUG_RETURN_FREED_MEMORY="1")
    assert not returned["kept"]
    # glibc's defaults: each step's two new tensors are fresh mappings, faulted in again
    assert returned["faults"] >= 12 * 2 * TENSOR_PAGES * 0.9
    # kept: the first steps grow the heap, then freed memory serves the next tensors
    assert kept["faults"] < returned["faults"] / 2
