"""A frozen copy of a learner's model with its weights moved: another network to play
(self-play's snapshots in tests), and a model's value acting alone."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import torch


def perturbed(model, seed: int):
    """A frozen deep copy of ``model``, every weight plus 0.5 N(0, 1) noise from ``seed``."""
    model = copy.deepcopy(model).requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in model.parameters():
            tensor += 0.5 * torch.randn(tensor.shape, generator=generator)
    return model


def value_alone(model, observation: torch.Tensor) -> torch.Tensor:
    """``model``'s value of one observation, acting on its own (what a lane of a batched
    forward must match)."""
    from neuroplug.rl.acting import ActorCriticActing

    alone = ActorCriticActing([SimpleNamespace(model=model, device=torch.device("cpu"))], 1)
    alone.refresh()
    return alone.act_members(observation[None], slice(0, 1), None, torch.Generator()).values[0]
