"""The policy every side of a strategies comparison evolves: ``observation -> hidden
(tanh) -> outputs``, the argmax of the outputs on a discrete task, ``tanh`` of them
scaled into the box on a continuous one (neuroplug's MLP policy), without observation
normalisation. Imported by the peers' scripts (each in its own venv)."""

from __future__ import annotations

import math

import numpy as np

HIDDEN = 16
"""The hidden width: a policy small enough for the full-covariance CMA-ES of pycma and
EvoTorch (D = 81 on Pendulum-v1, 114 on CartPole-v1)."""


def dimensions(observations: int, outputs: int, hidden: int = HIDDEN) -> int:
    """The policy's parameter count."""
    return observations * hidden + hidden + hidden * outputs + outputs


def default_population(dimension: int) -> int:
    """CMA-ES's default population ``4 + floor(3 ln D)`` (Hansen), which neuroplug's,
    pycma's and EvoTorch's CMA-ES, SNES and XNES all take."""
    return 4 + int(3 * math.log(dimension))


def act(params: np.ndarray, observation: np.ndarray, space, hidden: int = HIDDEN):
    """The policy's action at ``observation`` with flat ``params`` (weights ``(in, out)``
    then biases, layer by layer)."""
    inputs = observation.shape[-1]
    outputs = space.n if hasattr(space, "n") else space.shape[0]
    split = np.cumsum([inputs * hidden, hidden, hidden * outputs])
    w0, b0, w1, b1 = np.split(params, split)
    features = np.tanh(observation @ w0.reshape(inputs, hidden) + b0)
    out = features @ w1.reshape(hidden, outputs) + b1
    if hasattr(space, "n"):
        return int(np.argmax(out))
    return np.tanh(out) * space.high
