"""Batch invariance: a member's outputs are the same bits whatever batch it rides in.

The schedulers' identical results and bit-exact resume rest on this: which members share a
forward call, in what order, at which rows, and how many there are depends on the schedule
(serial, threaded, pipelined groups, episodes ending), never on the member. Each backend
and mode is checked on the device the suite finds: the CPU here (Triton on its
interpreter), the GPU where one is present, so a GPU machine running the suite tests the
claim on CUDA.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig  # noqa: E402

from neuroplug.lowrank import lowrank_for  # noqa: E402
from neuroplug.nets.mlp import MLP  # noqa: E402
from neuroplug.nets.nature_cnn import NatureCNN  # noqa: E402
from neuroplug.population import Population  # noqa: E402

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
SIZE = 40


def _population(network, num_bases=1, rank=None):
    generator = torch.Generator().manual_seed(7)
    bases = torch.stack([network.initial_params(generator) for _ in range(num_bases)])
    return Population(
        bases=bases,
        base_index=torch.arange(SIZE) % num_bases,
        scale=0.05 * torch.randn(SIZE, generator=generator),
        seed=torch.randint(0, 2**31 - 1, (SIZE,), generator=generator),
        lowrank=None if rank is None else lowrank_for(network.layout, rank, min_size=1),
    )


def _compositions(generator):
    """Member lists a schedule could send: everyone, one at a time, runs, shuffled subsets,
    a member on two rows at once."""
    everyone = torch.arange(SIZE)
    yield everyone
    yield everyone.flip(0)
    for member in (0, 13, SIZE - 1):
        yield torch.tensor([member])
    yield torch.arange(8, 24)
    for count in (3, 17, 33):
        yield torch.randperm(SIZE, generator=generator)[:count]
    yield torch.tensor([5, 9, 5, 31, 9])


def _assert_invariant(backend, observations, exact=True):
    """Every member's outputs in every composition equal its outputs in the full batch
    (bit for bit; to rounding where ``exact`` is false)."""
    device = backend.device
    full = backend.forward(torch.arange(SIZE), observations.to(device)).cpu()
    generator = torch.Generator().manual_seed(1)
    for members in _compositions(generator):
        out = backend.forward(members, observations[members].to(device)).cpu()
        for row, member in enumerate(members.tolist()):
            if exact:
                assert torch.equal(out[row], full[member]), (members.tolist(), member)
            else:
                torch.testing.assert_close(out[row], full[member], atol=1e-3, rtol=1e-3)


def _exact(device, rank):
    """Whether the torch backend's members are bit-for-bit batch invariant on ``device``.
    On the CPU always. On CUDA only the factored low-rank forward, whose shared products
    run in fixed tiles: the dense path's per-member ``bmm`` and grouped convolutions are
    cuBLAS and cuDNN kernels picked by the batch's shape (cuDNN convolutions in TF32), so
    a member's outputs there agree across batches to rounding (seen on an H100)."""
    return device == "cpu" or rank is not None


def _torch(device, network, population, **config):
    backend = TorchBackend(TorchBackendConfig(name="torch", device=device, **config), network)
    backend.load(population)
    return backend


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("num_bases", "rank", "config"),
    [
        (1, None, {}),  # materialised members, per-member bmm
        (2, None, {"max_materialized_mb": 0}),  # members rebuilt from seeds per call
        (1, 2, {"tile_rows": 8}),  # factored low rank, several tiles
        (2, 4, {"tile_rows": 16}),
    ],
)
def test_torch_backend_mlp_members_do_not_depend_on_their_batch(device, num_bases, rank, config):
    network = MLP(6, [32, 32], 3, "tanh")
    population = _population(network, num_bases, rank)
    observations = torch.randn(SIZE, 6, generator=torch.Generator().manual_seed(3))
    backend = _torch(device, network, population, **config)
    _assert_invariant(backend, observations, _exact(device, rank))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("rank", "config"), [(None, {}), (2, {"tile_rows": 16})])
def test_torch_backend_cnn_members_do_not_depend_on_their_batch(device, rank, config):
    network = NatureCNN((2, 36, 36), 3)
    population = _population(network, rank=rank)
    frames = torch.randint(0, 256, (SIZE, 2, 36, 36), dtype=torch.uint8)
    _assert_invariant(_torch(device, network, population, **config), frames, _exact(device, rank))


@pytest.mark.parametrize(
    ("mode", "num_bases", "rank"),
    [("noise", 2, None), ("dense", 1, None), ("noise", 1, 4), ("noise", 2, 2)],
)
def test_triton_backend_members_do_not_depend_on_their_batch(mode, num_bases, rank):
    pytest.importorskip("triton")
    from neuroplug_triton.backend import TritonBackend, TritonBackendConfig

    network = MLP(6, [32], 3, "tanh")
    population = _population(network, num_bases, rank)
    backend = TritonBackend(TritonBackendConfig(name="triton", mode=mode), network)
    backend.load(population)
    observations = torch.randn(SIZE, 6, generator=torch.Generator().manual_seed(3))
    _assert_invariant(backend, observations)
