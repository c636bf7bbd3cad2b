"""The first members of a run whose population must differ from the start.

neuroplug's networks start with near-zero outputs (OpenAI ES's small last layer, normc
0.01): every fresh draw acts alike. That suits a search around one point (ES, CMA-ES,
CEM), not a population that is its own diversity: an archive of behaviours (MAP-Elites,
CMA-MAE, PGA-ME) or ERL's GA, whose members are also the only data its learner's critics
see at first (alike members gave the critics one state and their estimates diverged).
"""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.api import AlgorithmContext


def perturbed_fresh_members(
    context: AlgorithmContext, seeds, sigma: float, rng: np.random.Generator
) -> torch.Tensor:
    """Fresh networks ``(len(seeds), D)``, one per seed, each parameter moved by
    ``N(0, sigma^2)`` drawn from ``rng`` so that their behaviours differ."""
    members = torch.stack([context.fresh_params(int(seed)) for seed in seeds])
    noise = torch.from_numpy(rng.standard_normal(tuple(members.shape))).float()
    return members + sigma * noise
