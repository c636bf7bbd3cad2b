"""Trained tensors live in one buffer, their gradients in another, and both stay seated."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from neuroplug.rl.flat_parameters import FlatParameters


def _tensors(seed: int = 0) -> list[nn.Parameter]:
    generator = torch.Generator().manual_seed(seed)
    return [nn.Parameter(torch.randn(shape, generator=generator)) for shape in [(3, 4), (4,), (2,)]]


def _loss(tensors: list[nn.Parameter]) -> torch.Tensor:
    weight, bias, scale = tensors
    return ((torch.ones(5, 3) @ weight + bias).tanh().sum() * scale).sum() * 10


def test_the_tensors_keep_their_values_and_train_through_the_buffers():
    tensors, reference = _tensors(), _tensors()
    trained = FlatParameters(tensors)
    for mine, theirs in zip(tensors, reference, strict=True):
        assert torch.equal(mine, theirs)
    optimizer = torch.optim.Adam([trained.flat], lr=0.01)
    reference_optimizer = torch.optim.Adam(reference, lr=0.01, foreach=False)
    for _ in range(3):
        trained.zero_grad()
        _loss(tensors).backward()  # autograd adds into the gradient views
        trained.clip_grad_norm_(0.5)
        optimizer.step()
        reference_optimizer.zero_grad()
        _loss(reference).backward()
        torch.nn.utils.clip_grad_norm_(reference, 0.5)
        reference_optimizer.step()
    trained.check_seated()
    for mine, theirs in zip(tensors, reference, strict=True):
        torch.testing.assert_close(mine, theirs)
        torch.testing.assert_close(mine.grad, theirs.grad)


def test_a_tensor_that_leaves_the_buffers_is_refused():
    tensors = _tensors()
    trained = FlatParameters(tensors)
    tensors[1].grad = None
    with pytest.raises(RuntimeError, match="left the flat buffers"):
        trained.check_seated()
    tensors = _tensors()
    trained = FlatParameters(tensors)
    tensors[0].data = tensors[0].data.clone()
    with pytest.raises(RuntimeError, match="left the flat buffers"):
        trained.check_seated()
