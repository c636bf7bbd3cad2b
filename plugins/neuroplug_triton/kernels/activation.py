"""The layer activations inside a kernel, selected by a compile-time code."""

from __future__ import annotations

import triton
import triton.language as tl

ACTIVATION_CODES = {"identity": 0, "tanh": 1, "relu": 2, "elu": 3, "sigmoid": 4}
"""Name (as in :data:`neuroplug.nets.layers.ACTIVATIONS`) -> the kernels' ``ACTIVATION`` code."""


@triton.jit
def activate(x, ACTIVATION: tl.constexpr):
    """``x`` through the activation with code ``ACTIVATION``."""
    if ACTIVATION == 1:
        # tanh from one exp of a non-positive argument: no overflow for large |x|.
        e = tl.exp(-2.0 * tl.abs(x))
        magnitude = (1.0 - e) / (1.0 + e)
        x = tl.where(x < 0, -magnitude, magnitude)
    elif ACTIVATION == 2:
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == 3:
        x = tl.where(x > 0, x, tl.exp(tl.minimum(x, 0.0)) - 1.0)
    elif ACTIVATION == 4:
        x = tl.sigmoid(x)
    return x
