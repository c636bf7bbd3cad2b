"""Large tensors without page faults: the C allocator keeps the memory freed tensors held.

glibc's ``malloc`` serves an allocation above its mmap threshold (32 MiB at most) with a
fresh mapping of the kernel's and hands it back when freed, so every new large tensor
(the KV caches of a population's completions, gathered per step; a batch of frames)
touches its pages for the first time again, a page fault each 4 KiB, which on CPU can cost
more than the arithmetic that fills it (``benchmarks/results/lm_prefill_runs.md``). With
mappings off and the heap's top kept, large tensors come from the heap, and once it has
grown to a step's needs (a few steps) freed memory serves the next ones: the process's
memory stays near its peak instead of following each step's, as PyTorch's CUDA allocator
keeps its cache.

Every process that computes a run's numbers calls :func:`keep_freed_memory` (the run's own,
Ray's evaluators and samplers), as it flushes denormals. Elsewhere than glibc (macOS,
musl) it does nothing; ``NEUROPLUG_RETURN_FREED_MEMORY=1`` in the environment keeps the
allocator's defaults (a process sharing a machine whose memory is tight).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
"""``mallopt``'s parameter: free memory at the heap's top above this is handed back."""
M_MMAP_MAX = -4
"""``mallopt``'s parameter: how many allocations may be mappings of their own (0: none)."""
KEPT_TOP = 2**31 - 1
"""The trim threshold set: the largest ``mallopt`` takes (an ``int``)."""
OPT_OUT = "NEUROPLUG_RETURN_FREED_MEMORY"


def keep_freed_memory() -> bool:
    """Have glibc's ``malloc`` keep freed memory for the next allocations (see the module
    docstring); whether it now does (False elsewhere than glibc, or opted out)."""
    if os.environ.get(OPT_OUT, "") not in ("", "0"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    # glibc's own function: elsewhere (musl's mallopt takes no parameter) nothing changes.
    if not hasattr(libc, "gnu_get_libc_version"):
        return False
    libc.mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(libc.mallopt(M_MMAP_MAX, 0)) and bool(libc.mallopt(M_TRIM_THRESHOLD, KEPT_TOP))
