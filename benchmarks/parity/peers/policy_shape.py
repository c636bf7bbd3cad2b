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


def initial_layers(observations: int, outputs: int, seed: int, hidden: int = HIDDEN):
    """The starting point neuroplug's MLP takes (OpenAI ES's ``normc``: Gaussian weights
    rescaled to norm 1 per hidden unit and 0.01 per output unit, zero biases), drawn from
    ``seed``: ``(w0 (inputs, hidden), b0, w1 (hidden, outputs), b1)``. Every side of a
    comparison starts its search here, so none starts from a better or worse place (EvoTorch
    would start at +-1e-5, pycma at zero)."""
    rng = np.random.default_rng(seed)
    layers = []
    for width_in, width_out, gain in ((observations, hidden, 1.0), (hidden, outputs, 0.01)):
        weight = rng.standard_normal((width_in, width_out))
        weight *= gain / np.sqrt((weight**2).sum(axis=0, keepdims=True))
        layers += [weight, np.zeros(width_out)]
    return tuple(layers)


def initial_params(observations: int, outputs: int, seed: int, hidden: int = HIDDEN):
    """:func:`initial_layers` flat in :func:`act`'s order (weights ``(in, out)`` then
    biases, layer by layer)."""
    return np.concatenate(
        [layer.ravel() for layer in initial_layers(observations, outputs, seed, hidden)]
    )


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
