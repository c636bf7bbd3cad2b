"""The Triton kernels, one by one, against PyTorch on fresh random inputs.

Without a GPU the kernels run on Triton's CPU interpreter, which must be switched on
before the kernel modules are imported; shapes stay tiny because the interpreter is slow.
Outputs are written into NaN-poisoned buffers with spare rows: every alive row must be
overwritten, the spare rows must stay NaN.
"""

from __future__ import annotations

import os

import pytest
import torch

# Triton reads the switch when it is imported (its own library is decorated then), so it
# is set before the first import of triton.
if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

import torch.nn.functional as F  # noqa: E402
from neuroplug_triton.kernels.activation import ACTIVATION_CODES  # noqa: E402
from neuroplug_triton.kernels.conv import population_conv  # noqa: E402
from neuroplug_triton.kernels.linear import population_linear  # noqa: E402
from neuroplug_triton.kernels.lowrank import ROW_BLOCK, lowrank_linear, row_tiles  # noqa: E402

from neuroplug.nets.layers import ACTIVATIONS  # noqa: E402
from neuroplug.population.lowrank import LowRank, LowRankMatrix  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def _population(num_params, size=6, num_bases=2, lowrank=None, generator=None, sigma=False):
    """Random bases and members; with ``sigma``, a per-parameter std in [0.1, 2) per base."""
    generator = generator or torch.Generator().manual_seed(0)
    return Population(
        bases=torch.randn(num_bases, num_params, generator=generator),
        base_index=torch.arange(size) % num_bases,
        scale=torch.rand(size, generator=generator) * 0.5 + 0.05,
        seed=torch.randint(0, 2**31 - 1, (size,), generator=generator),
        lowrank=lowrank,
        sigma=(
            torch.rand(num_bases, num_params, generator=generator) * 1.9 + 0.1 if sigma else None
        ),
    )


def _sigma_on_device(population):
    return None if population.sigma is None else population.sigma.to(DEVICE)


def _on_device(population):
    return (
        population.bases.to(DEVICE),
        population.base_index.to(DEVICE),
        population.scale.to(DEVICE),
        population.seed.to(DEVICE),
    )


def _poisoned(n, *shape):
    return torch.full((n + 2, *shape), float("nan"), device=DEVICE)


def _reference_linear(members, rows, x, w_offset, b_offset, fan_in, fan_out, activation):
    """Row j of x through member rows[j]'s (materialised) weights, in PyTorch."""
    outputs = []
    for j, member in enumerate(rows.tolist()):
        params = members[member]
        weight = params[w_offset : w_offset + fan_in * fan_out].reshape(fan_in, fan_out)
        bias = params[b_offset : b_offset + fan_out]
        outputs.append(ACTIVATIONS[activation](x[j].cpu() @ weight + bias))
    return torch.stack(outputs)


@pytest.mark.parametrize(
    ("w_offset", "fan_in", "fan_out", "observations", "activation"),
    [
        (0, 5, 8, 1, "tanh"),  # rows start on multiples of 4: one Philox call per 4 weights
        (3, 7, 3, 3, "elu"),  # unaligned: one Philox call per weight
        (4, 6, 12, 17, "relu"),  # 17 observations per member: tl.dot path
        (0, 9, 4, 2, "sigmoid"),
    ],
)
@pytest.mark.parametrize("sigma", [False, True], ids=["no-sigma", "sigma"])
def test_noise_linear_matches_materialized_members(
    w_offset, fan_in, fan_out, observations, activation, sigma
):
    b_offset = w_offset + fan_in * fan_out + 1
    generator = torch.Generator().manual_seed(fan_in * 100 + fan_out)
    population = _population(b_offset + fan_out + 2, generator=generator, sigma=sigma)
    rows = torch.tensor([4, 1, 1, 5])  # member 1 twice, members 0, 2, 3 dead
    x = torch.randn(len(rows), observations, fan_in, generator=generator)
    out = _poisoned(len(rows), observations, fan_out)
    population_linear(
        x.to(DEVICE),
        rows.to(DEVICE),
        *_on_device(population),
        w_offset,
        b_offset,
        fan_out,
        ACTIVATION_CODES[activation],
        perturb=True,
        out=out,
        sigma=_sigma_on_device(population),
    )
    expected = _reference_linear(
        population.materialize(), rows, x, w_offset, b_offset, fan_in, fan_out, activation
    )
    torch.testing.assert_close(out[: len(rows)].cpu(), expected, **TOLERANCE)
    assert torch.isnan(out[len(rows) :]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("observations", [1, 16])
def test_dense_linear_reads_only_the_alive_members(dtype, observations):
    fan_in, fan_out = 6, 5
    members = torch.randn(5, fan_in * fan_out + fan_out).to(dtype)
    rows = torch.tensor([3, 0])
    members[[1, 2, 4]] = float("nan")  # dead members: reading them would poison the output
    x = torch.randn(len(rows), observations, fan_in)
    out = _poisoned(len(rows), observations, fan_out)
    population_linear(
        x.to(DEVICE),
        rows.to(DEVICE),
        members.to(DEVICE),
        torch.arange(5, device=DEVICE),
        torch.zeros(5, device=DEVICE),
        torch.zeros(5, dtype=torch.int64, device=DEVICE),
        0,
        fan_in * fan_out,
        fan_out,
        ACTIVATION_CODES["identity"],
        perturb=False,
        out=out,
    )
    expected = _reference_linear(
        members.float(), rows, x, 0, fan_in * fan_out, fan_in, fan_out, "identity"
    )
    torch.testing.assert_close(out[: len(rows)].cpu(), expected, **TOLERANCE)
    assert torch.isnan(out[len(rows) :]).all()


def test_identical_seeds_give_identical_members_and_other_seeds_do_not():
    fan_in, fan_out = 4, 8
    population = _population(fan_in * fan_out + fan_out, size=3, num_bases=1)
    population.seed[:] = torch.tensor([11, 11, 12])
    population.scale[:] = 0.3
    x = torch.randn(1, 1, fan_in).repeat(3, 1, 1)
    out = population_linear(
        x.to(DEVICE),
        torch.arange(3, device=DEVICE),
        *_on_device(population),
        0,
        fan_in * fan_out,
        fan_out,
        ACTIVATION_CODES["identity"],
        perturb=True,
    ).cpu()
    assert torch.equal(out[0], out[1])
    assert not torch.allclose(out[0], out[2])


@pytest.mark.parametrize(("num_bases", "rows_alive", "rank"), [(1, 18, 2), (2, 4, 3), (1, 5, 4)])
def test_lowrank_linear_matches_the_lowrank_perturbation(num_bases, rows_alive, rank):
    fan_in, fan_out, w_offset = 12, 10, 4
    b_offset = w_offset + fan_in * fan_out
    lowrank = LowRank(rank, (LowRankMatrix(w_offset, fan_in, fan_out),))
    population = _population(b_offset + fan_out, size=20, num_bases=num_bases, lowrank=lowrank)
    generator = torch.Generator().manual_seed(rank)
    rows = torch.randperm(20, generator=generator)[:rows_alive]
    x = torch.randn(rows_alive, fan_in, generator=generator)
    out = _poisoned(rows_alive, fan_out)
    block = ROW_BLOCK if num_bases == 1 else 1
    lowrank_linear(
        x.to(DEVICE),
        row_tiles(rows, len(population), block, DEVICE),
        *_on_device(population),
        w_offset,
        b_offset,
        fan_out,
        rank,
        ACTIVATION_CODES["tanh"],
        out=out,
    )
    expected = _reference_linear(
        population.materialize(), rows, x, w_offset, b_offset, fan_in, fan_out, "tanh"
    )
    torch.testing.assert_close(out[:rows_alive].cpu(), expected, **TOLERANCE)
    assert torch.isnan(out[rows_alive:]).all()


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "perturb", "sigma"),
    [
        ((2, 9, 9), 4, 2, (0, 0, 0, 0), True, False),
        ((3, 7, 6), 3, 2, (1, 1, 0, 1), True, False),  # SAME-style zero padding
        ((2, 5, 5), 3, 1, (0, 0, 0, 0), False, False),  # dense weights
        ((2, 9, 9), 4, 2, (0, 0, 0, 0), True, True),  # per-parameter sigma, aligned rows
        ((3, 7, 6), 3, 2, (1, 1, 0, 1), True, True),  # per-parameter sigma, unaligned rows
    ],
)
def test_conv_reads_uint8_frames_and_matches_grouped_conv(
    shape, kernel, stride, padding, perturb, sigma
):
    channels, out_channels = shape[0], 16
    w_offset, fan_in = 4, channels * kernel * kernel
    b_offset = w_offset + out_channels * fan_in
    population = _population(b_offset + out_channels, size=4, sigma=sigma)
    rows = torch.tensor([2, 0, 2])
    frames = torch.randint(0, 256, (len(rows), 2, *shape), dtype=torch.uint8)  # 2 per member
    if perturb:
        params, base_index = population.bases, population.base_index
    else:
        params, base_index = population.materialize(), torch.arange(4)
    out_height = (shape[1] + padding[2] + padding[3] - kernel) // stride + 1
    out_width = (shape[2] + padding[0] + padding[1] - kernel) // stride + 1
    out = _poisoned(len(rows), 2, out_channels, out_height, out_width)
    population_conv(
        frames.to(DEVICE),
        rows.to(DEVICE),
        params.to(DEVICE),
        base_index.to(DEVICE),
        population.scale.to(DEVICE),
        population.seed.to(DEVICE),
        w_offset,
        b_offset,
        out_channels,
        kernel,
        stride,
        padding,
        perturb=perturb,
        input_scale=1.0 / 255.0,
        out=out,
        sigma=_sigma_on_device(population) if perturb else None,
    )
    assert torch.isnan(out[len(rows) :]).all()
    out = out.cpu()
    members = population.materialize()
    for j, member in enumerate(rows.tolist()):
        weight = members[member, w_offset:b_offset].reshape(out_channels, channels, kernel, kernel)
        bias = members[member, b_offset : b_offset + out_channels]
        images = F.pad(frames[j].float() / 255.0, padding)
        expected = torch.relu(F.conv2d(images, weight, bias, stride=stride))
        torch.testing.assert_close(out[j], expected, **TOLERANCE)
