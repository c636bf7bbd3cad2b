"""A frozen copy of a learner's model with its weights moved: another network to play
(self-play's snapshots in tests)."""

from __future__ import annotations

import copy

import torch


def perturbed(model, seed: int):
    """A frozen deep copy of ``model``, every weight plus 0.5 N(0, 1) noise from ``seed``."""
    model = copy.deepcopy(model).requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in model.parameters():
            tensor += 0.5 * torch.randn(tensor.shape, generator=generator)
    return model
