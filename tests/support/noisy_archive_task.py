"""A noisy task for quality-diversity tests: every episode is a draw, and every episode
each member played is recorded, so a test can hold an archive's elites to the mean of
what they played."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from neuroplug.api import Algorithm, EvaluationResult

FITNESS_NOISE = 1.0
"""Std of an episode's return around the member's own ``-||theta - 0.5||^2``."""
DESCRIPTOR_NOISE = 0.1
"""Std of an episode's descriptor around the member's first two parameters."""


class NoisyArchiveTask:
    """Plays an algorithm's rounds as a scheduler would, with seeded noise on every
    episode's return and descriptor, and keeps each member's episodes by its weights."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.played: dict[bytes, list[tuple[float, np.ndarray]]] = defaultdict(list)
        """A member's weights (their bytes) -> (return, descriptor) of each of its episodes."""

    def generation(self, algorithm: Algorithm) -> list[dict[str, float]]:
        """Every round of the algorithm's next generation; their stats."""
        started, stats = algorithm.generation, []
        while algorithm.generation == started:
            population = algorithm.ask()
            members = population.materialize(device="cpu")
            count, episodes = len(members), algorithm.episodes_per_member()
            true = -((members - 0.5) ** 2).sum(dim=1).double().numpy()
            returns = true[:, None] + self.rng.normal(0, FITNESS_NOISE, (count, episodes))
            behaviors = members[:, :2].double().numpy()[:, None, :]
            behaviors = behaviors + self.rng.normal(0, DESCRIPTOR_NOISE, (count, episodes, 2))
            for member, weights in enumerate(members):
                self.played[weights.numpy().tobytes()] += list(
                    zip(returns[member], behaviors[member], strict=True)
                )
            result = EvaluationResult(
                returns=returns,
                lengths=np.ones(returns.shape, dtype=np.int64),
                env_steps=returns.size,
                frames=returns.size,
                forward_passes=returns.size,
                behaviors=behaviors,
            )
            stats.append(algorithm.tell(population, result))
        return stats

    def episodes_of(self, weights: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """The returns ``(n,)`` and descriptors ``(n, 2)`` of every episode ``weights`` played."""
        played = self.played[weights.numpy().tobytes()]
        return np.array([ret for ret, _ in played]), np.array([place for _, place in played])
