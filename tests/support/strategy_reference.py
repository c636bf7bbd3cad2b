"""Running a Gaussian search strategy and its reference side by side on the benchmark
functions of :mod:`neuroplug.testing.synthetic`, for the strategies' tests."""

from __future__ import annotations

import statistics

import numpy as np
import torch

from neuroplug.testing.synthetic import minimize, synthetic_context

DIMENSION = 10
START = np.full(DIMENSION, 0.5)
"""Every run starts its mean here (pycma's x0 too)."""
SEEDS = (0, 1, 2)


def ours(strategy, config, cost, target: float, seed: int, budget: int) -> tuple[int, float]:
    """Evaluations one run of ``strategy`` needs to reach ``target`` (and its best cost)."""
    start = torch.tensor(START, dtype=torch.float32)
    context = synthetic_context(initial_params=start, seed=seed)
    return minimize(strategy(config, context), cost, target, budget)


def pycma(
    cost, target: float, seed: int, budget: int, sigma: float, **options
) -> tuple[int, float]:
    """Evaluations pycma's CMA-ES needs (``options``: pycma's, e.g. ``CMA_diagonal``)."""
    import cma

    settings = {"seed": seed + 1, "ftarget": target, "verbose": -9, "maxfevals": budget}
    strategy = cma.CMAEvolutionStrategy(START, sigma, {**settings, **options})
    while not strategy.stop():
        members = strategy.ask()
        costs = cost(np.array(members))
        strategy.tell(members, costs.tolist())
        if costs.min() <= target:
            break
    return strategy.countevals, float(strategy.best.f)


def pycma_ipop(cost, target: float, seed: int, budget: int, sigma: float, restarts: int):
    """pycma's IPOP-CMA-ES (``cma.fmin`` with ``incpopsize=2``)."""
    import cma

    result = cma.fmin(
        lambda x: float(cost(np.array([x]))[0]),
        START,
        sigma,
        {"seed": seed + 1, "ftarget": target, "verbose": -9, "maxfevals": budget},
        restarts=restarts,
        incpopsize=2,
    )
    return int(result[3]), float(result[1])


def median_evaluations(runs: list[tuple[int, float]], target: float) -> float:
    """The median evaluations of runs, where most reached ``target`` (asserted)."""
    reached = [evaluations for evaluations, best in runs if best <= target]
    assert len(reached) * 2 > len(runs), f"most runs must reach {target}: {runs}"
    return statistics.median(evaluations for evaluations, _ in runs)
