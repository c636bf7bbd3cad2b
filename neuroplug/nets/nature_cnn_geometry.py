"""The Nature CNN's convolutions as numbers, without torch: which frames it can take.

Read by :mod:`neuroplug.nets.nature_cnn` to build the network, and by the code that
chooses a network or a learner preset for an env (an image too small for these
convolutions is read by an MLP, flattened) before torch is imported.
"""

from __future__ import annotations

import math

CONV_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
"""(channels, kernel, stride) of the three convolutions."""


def conv_output_size(size: int, kernel: int, stride: int, padding: str) -> int:
    """A side's length after one convolution (``valid``, or TensorFlow's ``same``)."""
    if padding == "same":
        return math.ceil(size / stride)
    return (size - kernel) // stride + 1


def fits_nature_cnn(input_shape: tuple[int, ...], padding: str = "valid") -> bool:
    """Whether images of ``input_shape`` ``(C, H, W)`` leave at least one pixel after the
    Nature CNN's convolutions (VALID padding needs 36x36; SAME takes any size)."""
    if len(input_shape) != 3:
        return False
    height, width = input_shape[1:]
    for _, kernel, stride in CONV_LAYERS:
        height = conv_output_size(height, kernel, stride, padding)
        width = conv_output_size(width, kernel, stride, padding)
    return height >= 1 and width >= 1
