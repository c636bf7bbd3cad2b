"""FlatAdam steps as torch.optim.Adam does, and continues exactly from its checkpoint."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from neuroplug.adam import FlatAdam
from neuroplug.rl.flat_parameters import FlatParameters


def _tensors() -> list[nn.Parameter]:
    generator = torch.Generator().manual_seed(0)
    return [nn.Parameter(torch.randn(shape, generator=generator)) for shape in [(3, 4), (4,), (2,)]]


def _gradient(tensors: list[nn.Parameter], step: int) -> None:
    weight, bias, scale = tensors
    inputs = torch.linspace(-1, 1, 15).reshape(5, 3) * (step + 1)
    (((inputs @ weight + bias).tanh().sum(0) ** 2).sum() * scale).sum().backward()


def _torch_adam_steps(tensors, optimizer, steps, start=0):
    for step in range(start, start + steps):
        for group in optimizer.param_groups:
            group["lr"] = 0.01 / (step + 1)
        optimizer.zero_grad()
        _gradient(tensors, step)
        optimizer.step()


def _flat_adam_steps(tensors, trained, optimizer, steps, start=0):
    for step in range(start, start + steps):
        optimizer.learning_rate = 0.01 / (step + 1)
        trained.zero_grad()
        _gradient(tensors, step)
        optimizer.step()


def test_it_steps_as_torch_adam_does():
    reference, tensors = _tensors(), _tensors()
    _torch_adam_steps(reference, torch.optim.Adam(reference, eps=1e-5, foreach=False), 5)
    trained = FlatParameters(tensors)
    _flat_adam_steps(tensors, trained, FlatAdam(trained.flat, 0.01, eps=1e-5), 5)
    for mine, theirs in zip(tensors, reference, strict=True):
        torch.testing.assert_close(mine, theirs)


def test_a_checkpoint_continues_exactly():
    reference, tensors = _tensors(), _tensors()
    reference_adam = torch.optim.Adam(reference, eps=1e-5, foreach=False)
    _torch_adam_steps(reference, reference_adam, 3)
    trained = FlatParameters(tensors)
    earlier = FlatAdam(trained.flat, 0.01, eps=1e-5)
    _flat_adam_steps(tensors, trained, earlier, 3)
    resumed = FlatAdam(trained.flat, 0.01, eps=1e-5)
    resumed.load_state_dict(earlier.state_dict())
    _torch_adam_steps(reference, reference_adam, 2, start=3)
    _flat_adam_steps(tensors, trained, resumed, 2, start=3)
    for mine, theirs in zip(tensors, reference, strict=True):
        torch.testing.assert_close(mine, theirs)


def test_another_networks_state_is_refused():
    trained = FlatParameters(_tensors())
    small = FlatAdam(torch.zeros(5), 0.01).state_dict()
    with pytest.raises(ValueError, match="state for 5 parameters; this model trains 18"):
        FlatAdam(trained.flat, 0.01).load_state_dict(small)


def test_another_optimizers_state_is_refused_in_one_line():
    with pytest.raises(ValueError, match="older neuroplug"):
        FlatAdam(torch.zeros(5), 0.01).load_state_dict({"m": 0, "v": 0, "t": 3})
