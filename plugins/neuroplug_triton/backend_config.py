"""The settings of ``backend=triton``: its config schema, beside
:mod:`neuroplug_triton.backend`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.backend_configs`` entry point ``triton``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import BackendConfig
from neuroplug.errors import require

MODES = ("auto", "noise", "dense")


DENSE_DTYPE_NAMES = ("float32", "bfloat16")
"""The dense weights' storage types (the backend maps each to its torch dtype)."""


@dataclass
class TritonBackendConfig(BackendConfig):
    """Settings of the Triton backend: population inference in Triton kernels. It needs a
    CUDA GPU; ``TRITON_INTERPRET=1`` runs the same kernels on the CPU interpreter, slowly,
    for tests."""

    mode: str = "auto"
    """``auto`` (dense while the population fits ``max_materialized_mb``, else noise;
    low-rank populations factored), ``noise`` (weights rebuilt in-kernel from bases and
    seeds) or ``dense`` (members materialised once per evaluation)."""
    max_materialized_mb: int = 0
    """``auto`` materialises a population up to this many MiB; 0: half the GPU memory free
    when the population is loaded (4,096 MiB on the interpreter)."""
    dense_dtype: str = "float32"
    """Storage type of materialised members in dense mode: ``float32`` or ``bfloat16``."""

    def check(self) -> None:
        super().check()
        require(self.mode in MODES, "backend.mode", f"got {self.mode!r}", ", ".join(MODES))
        require(
            self.dense_dtype in DENSE_DTYPE_NAMES,
            "backend.dense_dtype",
            f"got {self.dense_dtype!r}",
            ", ".join(DENSE_DTYPE_NAMES),
        )
        require(
            self.max_materialized_mb >= 0,
            "backend.max_materialized_mb",
            f"got {self.max_materialized_mb}",
            "an integer >= 0 (0: half the free GPU memory)",
        )
