"""Batch invariance: a member's outputs are the same bits whatever batch it rides in.

The schedulers' identical results rest on this: which members share a forward call, in
what order, at which rows, and how many there are depends on the schedule (serial,
threaded, pipelined groups, episodes ending), never on the member. Each backend and mode
is checked on the device the suite finds: the CPU here (Triton on its interpreter), the
GPU where one is present, bit for bit where the backend claims batch invariance
(``Backend.batch_invariant``: the torch backend's tiles, Triton), to rounding elsewhere.
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"

from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig  # noqa: E402
from neuroplug_backends.torch_lowrank import FactoredLowRank  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from neuroplug.nets.mlp import MLP  # noqa: E402
from neuroplug.nets.nature_cnn import NatureCNN  # noqa: E402
from neuroplug.population.lowrank import lowrank_for  # noqa: E402
from neuroplug.population.members import Population  # noqa: E402

# Bit-equality across batches and companies: the outcome rests on the kernels the
# libraries pick (scripts/test_kernels.sh runs it again under a narrower instruction set).
pytestmark = pytest.mark.kernels

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


def _assert_invariant(backend, observations):
    """Every member's outputs in every composition equal its outputs in the full batch:
    bit for bit where the backend claims batch invariance, to rounding elsewhere."""
    exact = backend.batch_invariant
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


class _CallLog(TorchDispatchMode):
    """Every aten call that computes made inside, as a library sees it: the op, and each
    tensor argument's shape, strides and address modulo 64 bytes (what BLAS and oneDNN pick
    their kernels by). Views compute nothing (and the layout remembers a matrix's slot
    views, so whether they are made depends on the call before)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        def describe(value):
            if isinstance(value, torch.Tensor):
                return (tuple(value.shape), value.stride(), value.data_ptr() % 64, value.dtype)
            if isinstance(value, (list, tuple)):
                return tuple(describe(item) for item in value)
            return value

        if not func.is_view:
            self.calls.append((str(func), describe(args), describe(kwargs or {})))
        return func(*args, **(kwargs or {}))


def _tile_calls(backend, members, observations, monkeypatch) -> list[list[tuple]]:
    """The calls of each tile computed for ``backend.forward(members, ...)``."""
    tiles = []
    if backend._factored is not None:
        owner, name = FactoredLowRank, "_tile"
    else:
        owner, name = TorchBackend, "_apply"
    original = getattr(owner, name)

    def logged(*args):
        with _CallLog() as log:
            result = original(*args)
        tiles.append(log.calls)
        return result

    with monkeypatch.context() as patch:
        patch.setattr(owner, name, logged)
        backend.forward(members, observations[members])
    return tiles


@pytest.mark.parametrize(
    ("network", "rank", "config"),
    [
        (MLP(6, [32, 32], 3, "tanh"), None, {"batching": "tiles", "tile_rows": 8}),
        (MLP(6, [32, 32], 3, "tanh"), None, {"batching": "tiles", "max_materialized_mb": 0}),
        (MLP(6, [32], 3, "tanh", core="gru", core_size=8), None, {"batching": "tiles"}),
        (NatureCNN((2, 36, 36), 3), None, {}),
        (NatureCNN((2, 36, 36), 3), 2, {"tile_rows": 16}),
    ],
    ids=["mlp", "mlp-rebuilt", "mlp-gru", "nature-cnn", "nature-cnn-lowrank"],
)
def test_a_member_is_computed_by_the_same_calls_in_any_company(network, rank, config, monkeypatch):
    """The construction behind batch invariance, checked on any CPU: the library calls that
    compute a member alone are exactly the calls that compute it among others (same ops,
    shapes, strides and operand alignment), so no library can round it differently. The
    bit-for-bit tests above then hold wherever a library gives the same result for the
    same call, not only where its kernels happen to ignore the batch."""
    backend = _torch("cpu", network, _population(network, rank=rank), **config)
    observations = network.example_inputs(SIZE, torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(1)
    for member in (0, 13, SIZE - 1):
        (alone,) = _tile_calls(backend, torch.tensor([member]), observations, monkeypatch)
        for members in _compositions(generator):
            if member not in members.tolist():
                continue
            tiles = _tile_calls(backend, members, observations, monkeypatch)
            assert alone in tiles, (member, members.tolist())


def _torch(device, network, population, **config):
    backend = TorchBackend(TorchBackendConfig(name="torch", device=device, **config), network)
    backend.load(population)
    return backend


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("num_bases", "rank", "config"),
    [
        (1, None, {"batching": "tiles", "tile_rows": 8}),  # materialised members in tiles
        (2, None, {"batching": "tiles", "max_materialized_mb": 0}),  # rebuilt per call
        (1, None, {"batching": "alive"}),  # alive members in one call: to rounding
        (1, 2, {"tile_rows": 8}),  # factored low rank, several tiles
        (2, 4, {"tile_rows": 16}),
    ],
)
def test_torch_backend_mlp_members_do_not_depend_on_their_batch(device, num_bases, rank, config):
    network = MLP(6, [32, 32], 3, "tanh")
    population = _population(network, num_bases, rank)
    observations = torch.randn(SIZE, 6, generator=torch.Generator().manual_seed(3))
    backend = _torch(device, network, population, **config)
    _assert_invariant(backend, observations)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("rank", "config"), [(None, {}), (None, {"batching": "alive"}), (2, {"tile_rows": 16})]
)
def test_torch_backend_cnn_members_do_not_depend_on_their_batch(device, rank, config):
    network = NatureCNN((2, 36, 36), 3)
    population = _population(network, rank=rank)
    frames = torch.randint(0, 256, (SIZE, 2, 36, 36), dtype=torch.uint8)
    backend = _torch(device, network, population, **config)
    if device == "cpu" and not config:
        assert backend.batch_invariant  # a convolutional network runs in tiles by default
    _assert_invariant(backend, frames)


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
