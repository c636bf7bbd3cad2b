"""The C allocator keeps freed tensors' memory: a large tensor allocated again after one
was freed touches no new pages (glibc; elsewhere nothing is changed), and the opt-out
leaves the allocator as it was."""

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
for _ in range(5):  # the first times: new pages whatever the setting, the heap settling
    torch.ones(64 * 2**20 // 4).sum()
before = faults()
for _ in range(5):
    torch.ones(64 * 2**20 // 4).sum()  # 64 MiB: above any mmap threshold of glibc's
print(json.dumps({"kept": kept, "faults": faults() - before}))
"""


def _probe(**environment) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **environment},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(result.stdout.splitlines()[-1])


def test_a_large_tensor_allocated_again_touches_no_new_pages():
    kept = _probe()
    if not kept["kept"]:
        pytest.skip("not glibc's allocator: nothing to keep")
    pages = 5 * 64 * 2**20 // 4096
    assert kept["faults"] < pages // 10  # the freed pages served the next tensors
    returned = _probe(NEUROPLUG_RETURN_FREED_MEMORY="1")
    assert not returned["kept"]
    assert returned["faults"] >= pages // 2  # each tensor a fresh mapping, faulted in again
