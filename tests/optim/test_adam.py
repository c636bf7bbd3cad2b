"""FlatAdam steps as torch.optim.Adam does and continues exactly from its checkpoint; FusedAdam
is torch.optim.Adam's fused step bit for bit and reads and writes its state."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from neuroplug.optim.adam import FlatAdam
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
    with pytest.raises(ValueError, match="another optimizer"):
        FlatAdam(torch.zeros(5), 0.01).load_state_dict({"m": 0, "v": 0, "t": 3})


def _fused_steps(tensors, optimizer, steps, start=0):
    """``steps`` steps with a changing learning rate; the last tensor gets a gradient only
    on odd steps (an optimizer skips a tensor without one)."""
    for step in range(start, start + steps):
        optimizer.param_groups[0]["lr"] = 0.01 / (step + 1)
        optimizer.zero_grad(set_to_none=True)
        weight, bias, scale = tensors
        inputs = torch.linspace(-1, 1, 15).reshape(5, 3) * (step + 1)
        loss = ((inputs @ weight + bias).tanh().sum(0) ** 2).sum()
        (loss * scale.sum() if step % 2 else loss).backward()
        optimizer.step()


def test_fused_adam_is_torch_adams_fused_step_bit_for_bit():
    from neuroplug.optim.adam import FusedAdam

    ours, theirs = _tensors(), _tensors()
    _fused_steps(ours, FusedAdam(ours, 0.01), 7)
    _fused_steps(theirs, torch.optim.Adam(theirs, 0.01, fused=True), 7)
    for mine, reference in zip(ours, theirs, strict=True):
        assert torch.equal(mine, reference)


def test_fused_adam_reads_and_writes_torch_adams_state():
    from neuroplug.optim.adam import FusedAdam

    reference, resumed = _tensors(), _tensors()
    straight = torch.optim.Adam(reference, 0.01, fused=True)
    _fused_steps(reference, straight, 6)
    # Three steps by torch.optim, its state into FusedAdam, three more: the same numbers.
    first = torch.optim.Adam(resumed, 0.01, fused=True)
    _fused_steps(resumed, first, 3)
    ours = FusedAdam(resumed, 1.0)
    ours.load_state_dict(first.state_dict())
    _fused_steps(resumed, ours, 3, start=3)
    for mine, expected in zip(resumed, reference, strict=True):
        assert torch.equal(mine, expected)
    # ... and back: torch.optim loads FusedAdam's state.
    torch.optim.Adam(_tensors(), 0.01, fused=True).load_state_dict(ours.state_dict())
    with pytest.raises(ValueError, match="3 tensors"):
        FusedAdam(_tensors()[:2], 0.01).load_state_dict(ours.state_dict())
