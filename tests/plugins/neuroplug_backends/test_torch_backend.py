"""The torch backend: only alive members are computed, and each as its own network."""

from __future__ import annotations

import pytest
import torch
from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.population.members import Population

# Bit-equality across batches and companies: the outcome rests on the kernels the
# libraries pick (scripts/test_kernels.sh runs it again under a narrower instruction set).
pytestmark = pytest.mark.kernels


def _population(network, size=6):
    center = network.initial_params(torch.Generator().manual_seed(0))
    return Population(
        bases=center.unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=torch.full((size,), 0.5),
        seed=torch.arange(size, dtype=torch.int64) + 10,
    )


@pytest.mark.parametrize("budget_mb", [4096, 0])  # materialised once / rebuilt per call
def test_forward_of_alive_members_matches_naive_loop(budget_mb):
    network = MLP(4, [32], 2, "tanh")
    population = _population(network)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=budget_mb), network
    )
    backend.load(population)
    alive = torch.tensor([5, 0, 3])
    inputs = torch.randn(3, 4)
    outputs = backend.forward(alive, inputs)
    members = population.materialize()
    expected = torch.stack(
        [
            network.forward_single(members[m], inputs[j : j + 1])[0]
            for j, m in enumerate(alive.tolist())
        ]
    )
    assert torch.allclose(outputs, expected, atol=1e-5)


def test_forward_before_load_is_an_error():
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), MLP(2, [2], 2, "tanh"))
    with pytest.raises(RuntimeError, match="before load"):
        backend.forward(torch.tensor([0]), torch.zeros(1, 2))


def test_cuda_request_without_gpu_names_the_field():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    from neuroplug.errors import ConfigError

    with pytest.raises(ConfigError, match="backend.device"):
        TorchBackend(TorchBackendConfig(name="torch", device="cuda"), MLP(2, [2], 2, "tanh"))


def test_any_subset_of_members_gives_the_rows_of_the_full_forward():
    """Runs, sparse subsets, unsorted and repeated members: every path agrees bit for bit."""
    network = MLP(4, [8], 2, "tanh")
    population = Population(
        bases=network.initial_params(torch.Generator().manual_seed(0)).unsqueeze(0),
        base_index=torch.zeros(12, dtype=torch.int64),
        scale=torch.full((12,), 0.1),
        seed=torch.arange(12),
    )
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    observations = torch.randn(12, 4)
    full = backend.forward(torch.arange(12), observations)
    for members in ([3, 4, 5], [5, 3, 4], [2, 4, 5, 7], [7, 2, 2, 5], [0, 11], [6, 6]):
        members = torch.tensor(members)
        inputs = torch.randn(len(members), 4)
        expected = network.forward_population(population.materialize(members), inputs)
        assert torch.equal(backend.forward(members, inputs), expected), members
        assert torch.equal(backend.forward(members, observations[members]), full[members])


def test_scattered_members_dying_off_run_on_a_compacted_copy_remade_when_half_have_died():
    """The episodes of a generation end one by one: the scattered survivors run on a copy
    of their weights, remade only when a member is missing from it or half of it has died,
    and every output is the full forward's row, bit for bit."""
    from neuroplug_backends.torch_backend import CompactedMembers

    network = MLP(4, [8], 2, "tanh")
    population = _population(network, size=40)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    observations = torch.randn(40, 4, generator=torch.Generator().manual_seed(1))
    full = backend.forward(torch.arange(40), observations)
    remakes = []
    original = CompactedMembers.rows

    def counting(self, params, index, device):
        before = self.members
        result = original(self, params, index, device)
        remakes.append(self.members is not before)
        return result

    alive = [0, 3, 7, 12, 18, 25, 31, 39]  # scattered: span 40 > 2 x 8
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CompactedMembers, "rows", counting)
        for survivors in (alive, alive[1:], alive[2:6] + [39], [12, 25, 39], [25, 39, 3]):
            members = torch.tensor(survivors)
            got = backend.forward(members, observations[members])
            assert torch.equal(got, full[members]), survivors
    # Remade at first, kept while at least half of it is asked, remade at 3 of 8, kept for
    # 3 of 3, remade when member 3 (dropped with the last remake) comes back.
    assert remakes == [True, False, False, True, True]


@pytest.mark.parametrize("bases", [1, 2])
def test_lowrank_populations_run_factored_and_match_their_materialised_members(bases):
    from neuroplug.population.lowrank import lowrank_for

    network = MLP(5, [24, 20], 3, "tanh")
    lowrank = lowrank_for(network.layout, rank=2, min_size=400)
    assert [matrix.offset for matrix in lowrank.matrices] == [network.layout.slots["w1"].offset]
    generator = torch.Generator().manual_seed(1)
    population = Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(bases)]),
        base_index=torch.arange(10) % bases,
        scale=torch.tensor([0.0, 0.5, -0.5, 0.5, -0.5, 0.2, -0.2, 1.0, -1.0, 0.3]),
        seed=torch.tensor([0, 1, 1, 2, 2, 3, 3, 4, 4, 5]),
        lowrank=lowrank,
    )
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    assert backend._factored is not None
    observations = torch.randn(10, 5)
    full = backend.forward(torch.arange(10), observations)
    for members in ([0, 1, 2], [9, 3, 3, 7], list(range(10))):
        members = torch.tensor(members)
        inputs = torch.randn(len(members), 5)
        expected = network.forward_population(population.materialize(members), inputs)
        torch.testing.assert_close(backend.forward(members, inputs), expected)
        # A member's outputs do not depend on who else is in the batch.
        assert torch.equal(backend.forward(members, observations[members]), full[members])


def _es_population(network, size, rank, min_size, bases=1):
    """Mirrored low-rank pairs around ``bases`` centers (an unperturbed member first)."""
    from neuroplug.population.lowrank import lowrank_for

    generator = torch.Generator().manual_seed(3)
    scale = torch.full((size,), 0.3)
    scale[1::2] = -0.3
    scale[0] = 0.0
    return Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(bases)]),
        base_index=torch.sort(torch.arange(size) % bases).values,
        scale=scale,
        seed=torch.arange(size) // 2 + 40,
        lowrank=lowrank_for(network.layout, rank, min_size),
    )


@pytest.mark.parametrize(("bases", "padding"), [(1, "valid"), (2, "same")])
def test_lowrank_nature_cnn_runs_factored_convolutions(bases, padding, monkeypatch):
    """Low-rank convolution kernels run as the shared convolution plus each member's
    rank filters; the population is never materialised, and any subset of members (in
    tiles of 4 here, so several tiles and a padded last one) gives the full forward's rows."""
    network = NatureCNN((2, 36, 36), 3, padding)
    population = _es_population(network, size=11, rank=2, min_size=1000, bases=bases)
    shapes = [network.layout.slots[f"conv{i}.w"].offset for i in range(3)]
    assert set(shapes) <= {matrix.offset for matrix in population.lowrank.matrices}
    expected = network.forward_population(population.materialize(), frames := _frames(11))

    def refuse(*args, **kwargs):
        raise AssertionError("the factored path must not materialise members")

    monkeypatch.setattr(Population, "materialize", refuse)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu", tile_rows=4), network)
    backend.load(population)
    assert backend._factored is not None
    full = backend.forward(torch.arange(11), frames)
    # (W + A Bᵀ) x and W x + A (Bᵀ x) round differently, over thousands of terms.
    torch.testing.assert_close(full, expected, rtol=1e-3, atol=1e-3)
    for members in ([10], [3, 9, 4], [8, 2, 2, 5, 8]):
        members = torch.tensor(members)
        assert torch.equal(backend.forward(members, frames[members]), full[members]), members


def _frames(count):
    generator = torch.Generator().manual_seed(count)
    return torch.randint(0, 256, (count, 2, 36, 36), dtype=torch.uint8, generator=generator)


@pytest.mark.parametrize("tile_rows", [1, 5, 32])
def test_lowrank_mlp_members_do_not_depend_on_the_batch_for_any_tile_size(tile_rows):
    network = MLP(7, [48, 40], 6, "tanh")
    population = _es_population(network, size=23, rank=3, min_size=1)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", tile_rows=tile_rows), network
    )
    backend.load(population)
    observations = torch.randn(23, 7)
    full = backend.forward(torch.arange(23), observations)
    expected = network.forward_population(population.materialize(), observations)
    torch.testing.assert_close(full, expected, rtol=1e-4, atol=1e-5)
    generator = torch.Generator().manual_seed(5)
    for count in (1, 4, 12, 22):
        members = torch.randperm(23, generator=generator)[:count]
        assert torch.equal(backend.forward(members, observations[members]), full[members])


def test_a_population_of_bases_alone_skips_the_factored_path():
    population = _es_population(MLP(7, [48], 6, "tanh"), size=4, rank=3, min_size=1)
    population.scale.zero_()
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), MLP(7, [48], 6, "tanh"))
    backend.load(population)
    assert backend._factored is None


def _sigma_population(network, size=6):
    generator = torch.Generator().manual_seed(2)
    return Population(
        bases=torch.randn(2, network.num_params, generator=generator),
        base_index=torch.arange(size, dtype=torch.int64) % 2,
        scale=torch.ones(size),
        seed=torch.arange(size, dtype=torch.int64) + 20,
        sigma=torch.rand(2, network.num_params, generator=generator),
    )


def _fresh_population(network, size=6):
    from neuroplug.nets.network import SeededInitializer

    seeds = torch.arange(size, dtype=torch.int64) + 30
    return Population.fresh(seeds, SeededInitializer(network), network.num_params)


@pytest.mark.parametrize("budget_mb", [4096, 0])
@pytest.mark.parametrize("build", [_sigma_population, _fresh_population])
def test_every_member_form_runs_exactly_as_materialize_builds_it(build, budget_mb):
    network = MLP(4, [16], 2, "tanh")
    population = build(network)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=budget_mb), network
    )
    backend.load(population)
    alive = torch.tensor([4, 1, 2])
    inputs = torch.randn(3, 4)
    params = population.materialize(alive)
    expected = network.forward_population(params, inputs)
    assert torch.equal(backend.forward(alive, inputs), expected)


def _spied_mlp_backend(budget_mb: int, batching: str):
    """A torch backend on 3 MLP members, and the list every parameter tensor its forward
    passes reach the network with is appended to."""
    network = MLP(4, [32], 2, "tanh")
    population = _population(network, size=3)
    config = TorchBackendConfig(
        name="torch", device="cpu", max_materialized_mb=budget_mb, batching=batching
    )
    backend = TorchBackend(config, network)
    backend.load(population)
    seen = []
    forward_population = network.forward_population

    def spy(params, inputs):
        seen.append(params)
        return forward_population(params, inputs)

    network.forward_population = spy
    return backend, population, seen


@pytest.mark.parametrize("budget_mb", [4096, 0])
def test_one_member_on_many_rows_runs_its_tile_once_per_row(budget_mb):
    """A policy evaluated on many episodes at once: each row is the member's own tile (a
    view of the materialised weights, never a copy), so every row is the bits the member
    gets alone, whatever the number of rows."""
    backend, population, seen = _spied_mlp_backend(budget_mb, "tiles")
    rows = torch.full((10,), 2)
    inputs = torch.randn(10, 4)
    outputs = backend.forward(rows, inputs)
    assert len(seen) == 10 and all(params.shape[0] == 3 for params in seen)
    if budget_mb:
        weights = backend._params
        assert all(params.data_ptr() == weights.data_ptr() for params in seen)
    for row in range(10):
        alone = backend.forward(rows[:1], inputs[row : row + 1])
        assert torch.equal(outputs[row], alone[0])


@pytest.mark.parametrize("budget_mb", [4096, 0])
def test_alive_batching_runs_one_member_on_many_rows_as_one_forward_of_its_vector(budget_mb):
    """``batching=alive``: a policy evaluated on many episodes at once reaches the network
    as one parameter vector broadcast to the rows (stride 0), not a copy per row."""
    backend, population, seen = _spied_mlp_backend(budget_mb, "alive")
    assert not backend.batch_invariant
    rows = torch.full((10,), 2)
    inputs = torch.randn(10, 4)
    outputs = backend.forward(rows, inputs)
    assert len(seen) == 1 and seen[0].shape[0] == 10 and seen[0].stride(0) == 0
    expected = backend.network.forward_population(population.materialize()[rows], inputs)
    torch.testing.assert_close(outputs, expected, atol=1e-6, rtol=1e-5)


def test_the_plan_says_when_a_population_is_too_big_to_keep_in_memory():
    network = MLP(4, [32], 2, "tanh")  # 226 params: 64 members are 0.06 MB
    roomy = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    assert roomy.plan(64) == ""
    tight = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=0), network
    )
    assert "rebuilt from their seeds at every step" in tight.plan(64)
    assert "backend.max_materialized_mb=0" in tight.plan(64)


@pytest.mark.parametrize("budget_mb", [4096, 0])  # materialised once / rebuilt per call
def test_virtual_batch_norm_members_run_deployed_alive_only_on_either_path(budget_mb):
    network = MLP(4, [16, 8], 2, "tanh", vbn=True)
    network.reference_batch = 2.0 + torch.randn(24, 4)
    population = _population(network, size=7)
    backend = TorchBackend(
        TorchBackendConfig(name="torch", device="cpu", max_materialized_mb=budget_mb), network
    )
    backend.load(population)
    deployed = network.deploy(population.materialize())
    inputs = torch.randn(7, 4)
    everyone = backend.forward(torch.arange(7), inputs)
    assert torch.equal(everyone, network.forward_population(deployed, inputs))
    alive = torch.tensor([6, 1, 4])
    assert torch.equal(backend.forward(alive, inputs[alive]), everyone[alive])
    # The statistics matter: the raw members act otherwise.
    assert not torch.allclose(
        everyone, network.forward_population(population.materialize(), inputs)
    )


@pytest.mark.parametrize("core", ["none", "gru"])
def test_scattered_members_compute_their_tiles_in_place(core):
    """Big members' weights are never gathered: only the tiles holding an alive member are
    computed, each on a view of its materialised rows, and every member's outputs (and
    states) are the bits it gets alone."""
    from neuroplug.nets.nature_cnn import NatureCNN

    network = NatureCNN((2, 36, 36), 3, core=core, core_size=8)
    population = _population(network, size=20)
    config = TorchBackendConfig(name="torch", device="cpu", batching="tiles", tile_rows=4)
    backend = TorchBackend(config, network)
    backend.load(population)
    # Tiles 0 (members 0-2), 2 (9) and 4 (17-18), in the lanes' order.
    alive = torch.tensor([17, 0, 1, 9, 18, 2])
    inputs = network.example_inputs(6, torch.Generator().manual_seed(3))
    state = torch.randn(6, network.state_size)
    seen = []
    name = "forward_population" if core == "none" else "forward_population_with_state"
    original = getattr(network, name)

    def spy(params, *rest):
        seen.append(params)
        return original(params, *rest)

    setattr(network, name, spy)

    def forward(members, rows):
        if core == "none":
            return backend.forward(members, inputs[rows]), None
        return backend.forward_with_state(members, inputs[rows], state[rows])

    outputs, states = forward(alive, slice(None))
    storage = backend._params.untyped_storage().data_ptr()
    assert len(seen) == 3
    assert all(params.untyped_storage().data_ptr() == storage for params in seen)
    for row, member in enumerate(alive.tolist()):
        alone, alone_state = forward(torch.tensor([member]), slice(row, row + 1))
        assert torch.equal(outputs[row], alone[0])
        if core != "none":
            assert torch.equal(states[row], alone_state[0])


@pytest.mark.parametrize("core", ["none", "gru"])
def test_alive_batching_runs_scattered_big_members_as_views(monkeypatch, core):
    """``batching=alive``: big members' weights are not gathered at every step: each run of
    consecutive alive members runs in place, and the outputs (and states) are the gather's
    (to rounding: the calls differ in shape)."""
    from neuroplug_backends import torch_backend

    from neuroplug.nets.nature_cnn import NatureCNN

    network = NatureCNN((2, 36, 36), 3, core=core, core_size=8)
    population = _population(network, size=20)
    # Runs 0-2, 9, 17-18, in the lanes' order, too spread out to compute the dead between.
    alive = torch.tensor([17, 0, 1, 9, 18, 2])
    inputs = network.example_inputs(6, torch.Generator().manual_seed(3))
    state = torch.randn(6, network.state_size)
    results, calls = [], []
    for bytes_per_call in (0, 2**62):  # every run its own call / always gathered
        monkeypatch.setattr(torch_backend, "BYTES_PER_CALL", bytes_per_call)
        config = TorchBackendConfig(name="torch", device="cpu", batching="alive")
        backend = TorchBackend(config, network)
        backend.load(population)
        monkeypatch.setattr(
            backend, "_apply", lambda *args, apply=backend._apply: calls.append(1) or apply(*args)
        )
        calls.clear()
        if core == "none":
            results.append((backend.forward(alive, inputs), None))
        else:
            results.append(backend.forward_with_state(alive, inputs, state))
        results[-1] = (*results[-1], len(calls))
    assert results[0][2] == 3 and results[1][2] == 1  # three runs as views / one gather
    torch.testing.assert_close(results[0][0], results[1][0], atol=1e-5, rtol=1e-4)
    if core != "none":
        torch.testing.assert_close(results[0][1], results[1][1], atol=1e-5, rtol=1e-4)


def test_the_torch_backend_leaves_triton_unimported():
    """A run on the torch backend imports no Triton (its interpreter must be chosen before
    Triton's first import, and it costs start-up): choosing tiles counts a member's FLOPs
    from the layer table, not with PyTorch's flop counter, which imports Triton."""
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig\n"
        "from neuroplug.nets.nature_cnn import NatureCNN\n"
        "from neuroplug.population.members import Population\n"
        "network = NatureCNN((2, 36, 36), 3)\n"
        "backend = TorchBackend(TorchBackendConfig(name='torch', device='cpu'), network)\n"
        "params = network.initial_params(torch.Generator().manual_seed(0))\n"
        "backend.load(Population.dense(params.unsqueeze(0).repeat(4, 1)))\n"
        "assert backend.batch_invariant\n"
        "print(sorted(m for m in sys.modules if m == 'triton' or m.startswith('triton.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]", result.stdout


def test_auto_batching_runs_a_single_policys_episodes_in_one_call():
    """A population of one convolutional policy (an evaluation of the ES center or of a
    learner): its episodes' rows in one call, not a tile per row; a population of them in
    tiles."""
    from neuroplug.nets.nature_cnn import NatureCNN

    network = NatureCNN((2, 36, 36), 3)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(_population(network, size=1))
    assert not backend.batch_invariant
    backend.load(_population(network, size=4))
    assert backend.batch_invariant


def test_a_lowrank_population_reading_measurements_runs_its_members_materialised():
    """The factored tiles do not run the join of measurements: such a population's members
    run materialised, and read them."""
    network = NatureCNN((1, 37, 36), 3, "valid", measurements=3)
    population = _es_population(network, 4, rank=1, min_size=400)
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    backend.load(population)
    assert backend._factored is None
    frames = network.example_inputs(4, torch.Generator().manual_seed(2))
    expected = network.forward_population(population.materialize(torch.arange(4)), frames)
    torch.testing.assert_close(backend.forward(torch.arange(4), frames), expected)
