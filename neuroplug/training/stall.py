"""Saying when an evolutionary search has stalled: nothing to follow for several generations.

When every member of a population scores the same, rank-based and fitness-weighted updates
have nothing to follow: ES's gradient is zero and the center never moves again, silently.
It happens when the perturbations are too small to change any action (a small ``sigma``
against a network whose outputs hardly differ between members: a policy's argmax that no
member's noise can flip), or when every action scores the same on the task. A search that
is driven by behaviours rather than fitness (novelty search, quality diversity) is not
stalled by a flat fitness, and is not watched for it.
"""

from __future__ import annotations

import numpy as np

PATIENCE = 5
"""Consecutive generations without signal before it is said (once per stall)."""

STEP_SIZE_SETTINGS = ("sigma", "sigma_init", "sigma0")
"""The names algorithms give their (initial) perturbation scale."""

ADAPTING_STRATEGIES = ("snes", "xnes", "cma_es", "sep_cma_es", "pgpe")
"""Strategies that adapt their step size to the search (the advice names them)."""


class StallWatch:
    """Counts generations in which every member scored the same or the update was zero,
    and says it once when :data:`PATIENCE` of them follow each other."""

    def __init__(self, algorithm_config, patience: int = PATIENCE) -> None:
        self.config = algorithm_config
        self.patience = patience
        self._flat = 0
        self._said = False

    def observe(
        self, generation: int, fitness: np.ndarray, stats: dict[str, float], by_behavior: bool
    ) -> str | None:
        """The line to say after ``generation`` (1-based), or None. ``by_behavior``: the
        algorithm follows behaviours, so only a zero update counts as no signal."""
        finite = fitness[np.isfinite(fitness)]
        equal = not by_behavior and len(finite) > 1 and float(np.ptp(finite)) == 0.0
        still = stats.get("gradient_norm") == 0.0
        if not (equal or still):
            self._flat, self._said = 0, False
            return None
        self._flat += 1
        if self._flat < self.patience or self._said:
            return None
        self._said = True
        first = generation - self._flat + 1
        what = (
            f"every member scored {float(finite[0]):g}"
            if equal
            else "the update was zero (algo/gradient_norm 0)"
        )
        return (
            f"warning: generations {first}-{generation}: {what}, so the search has nothing "
            f"to follow and stays where it is. What usually helps: {self._advice()}"
        )

    def _advice(self) -> str:
        config = self.config
        advice = []
        for name in STEP_SIZE_SETTINGS:
            if hasattr(config, name):
                value = getattr(config, name)
                advice.append(f"a larger algo.{name} (now {value:g}), so members act differently")
                break
        if getattr(config, "name", None) not in ADAPTING_STRATEGIES:
            advice.append(
                "a strategy that adapts its step size (algo=snes, algo=cma_es for small networks)"
            )
        advice.append(
            "a network whose outputs differ more between members (a larger output layer "
            "scale, or an initialisation that does not squash the outputs)"
        )
        return "; ".join(advice)
