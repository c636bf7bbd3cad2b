"""PyTorch's CPU threads: a fixed count stays, auto follows other processes' load, and the
population forwards give the same bits whatever the count."""

from __future__ import annotations

import contextlib

import pytest
import torch

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.runtime import devices
from neuroplug.runtime.devices import (
    MediumPrecision,
    TorchThreads,
    classify_medium_precision,
    describe_matmul_precision,
    follow_the_load,
    measure_medium_precision,
)


@pytest.fixture(autouse=True)
def _restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


class _Machine:
    """A fake clock, /proc/stat and process CPU time: the run's cores and who uses them."""

    def __init__(self, monkeypatch, cores: int) -> None:
        self.wall = self.busy = self.own = 0.0
        monkeypatch.setattr(devices, "available_cores", lambda: cores)
        monkeypatch.setattr(devices, "_busy_cpu_seconds", lambda cpus: self.busy)
        monkeypatch.setattr(devices.time, "monotonic", lambda: self.wall)
        monkeypatch.setattr(devices, "own_cpu_seconds", lambda: self.own)

    def run(self, seconds: float, own_cores: float, other_cores: float) -> None:
        self.wall += seconds
        self.own += seconds * own_cores
        self.busy += seconds * (own_cores + other_cores)


def test_a_fixed_count_is_kept_whatever_the_load(monkeypatch):
    machine = _Machine(monkeypatch, cores=4)
    threads = TorchThreads(3)
    machine.run(5.0, own_cores=1.0, other_cores=3.0)
    assert threads.apply() == 3 and torch.get_num_threads() == 3
    assert "auto" not in threads.describe()


def test_auto_takes_every_core_when_idle_and_one_when_others_want_them(monkeypatch):
    machine = _Machine(monkeypatch, cores=4)
    threads = TorchThreads(0)
    assert threads.threads == 4 and "auto: follows the load" in threads.describe()
    machine.run(2.0, own_cores=3.8, other_cores=0.1)  # the run alone: its own use is no load
    assert threads.apply() == 4
    machine.run(2.0, own_cores=1.5, other_cores=2.0)  # two CPU-bound processes beside it
    assert threads.apply() == 1 and torch.get_num_threads() == 1
    machine.run(0.2, own_cores=1.0, other_cores=0.0)  # too short a window to judge: kept
    assert threads.apply() == 1
    machine.run(2.0, own_cores=1.0, other_cores=0.0)  # they ended
    assert threads.apply() == 4


def test_within_the_fixed_math_a_part_follows_the_load_and_the_fixed_count_comes_back(
    monkeypatch,
):
    machine = _Machine(monkeypatch, cores=4)
    # A CPU whose products give the same bits at any count (else: the test below).
    monkeypatch.setattr(devices, "products_ignore_thread_count", lambda cores: True)
    threads = TorchThreads(0)
    with follow_the_load() as recheck:  # outside an algorithm's math: nothing to do
        recheck()
        assert torch.get_num_threads() == 4
    machine.run(2.0, own_cores=1.0, other_cores=3.0)  # others want the cores
    with threads.fixed():
        assert torch.get_num_threads() == 4  # the math's count, whatever the load
        with follow_the_load() as recheck:
            assert torch.get_num_threads() == 1
            machine.run(2.0, own_cores=1.0, other_cores=0.0)  # they ended mid-part
            recheck()
            assert torch.get_num_threads() == 4
        assert torch.get_num_threads() == 4
    with TorchThreads(3).fixed(), follow_the_load():
        assert torch.get_num_threads() == 3  # a count the user asked for is kept


def test_where_products_depend_on_the_count_a_part_runs_on_one_thread_whatever_the_load(
    monkeypatch,
):
    machine = _Machine(monkeypatch, cores=4)
    monkeypatch.setattr(devices, "products_ignore_thread_count", lambda cores: False)
    threads = TorchThreads(0)
    for others in (0.0, 3.0):  # an idle machine, then a busy one: the same count
        machine.run(2.0, own_cores=1.0, other_cores=others)
        with threads.fixed():
            with follow_the_load() as recheck:
                recheck()
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 4


def test_the_product_probe_says_whether_one_thread_and_every_core_give_the_same_bits():
    cores = max(2, torch.get_num_threads())
    generator = torch.Generator().manual_seed(1)
    differs = False
    for batch, rows, inner, cols in devices.PRODUCT_SHAPES:
        lead = (batch,) if batch else ()
        left = torch.randn(*lead, rows, inner, generator=generator)
        right = torch.randn(*lead, inner, cols, generator=generator)
        with _threads(1):
            one = left @ right
        with _threads(cores):
            many = left @ right
        differs |= not torch.equal(one, many)
    if differs:  # a shape that differs here must be caught by the probe
        assert not devices.products_ignore_thread_count(cores)


@contextlib.contextmanager
def _threads(count: int):
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("network", "inputs"),
    [
        (MLP(8, [64, 64], 4, "tanh"), torch.randn(32, 8)),
        (NatureCNN((4, 84, 84), 6), torch.randint(0, 255, (4, 4, 84, 84), dtype=torch.uint8)),
    ],
)
@pytest.mark.kernels
def test_population_forwards_are_the_same_bits_at_any_thread_count(network, inputs):
    generator = torch.Generator().manual_seed(0)
    params = torch.stack([network.initial_params(generator) for _ in range(len(inputs))])
    outputs = []
    for count in (1, 2, 3):
        torch.set_num_threads(count)
        outputs.append(network.forward_population(params, inputs))
    assert all(torch.equal(outputs[0], other) for other in outputs[1:])


def test_between_busy_and_free_the_count_stays(monkeypatch):
    machine = _Machine(monkeypatch, cores=2)
    threads = TorchThreads(0)
    machine.run(2.0, own_cores=1.0, other_cores=0.4)  # neither busy nor free: as it was
    assert threads.apply() == 2
    machine.run(2.0, own_cores=1.0, other_cores=0.6)
    assert threads.apply() == 1
    machine.run(2.0, own_cores=1.0, other_cores=0.4)  # no flapping back at the edge
    assert threads.apply() == 1


@pytest.mark.parametrize(
    ("network", "inputs"),
    [
        (MLP(8, [64, 64], 4, "tanh"), torch.randn(32, 8)),
        (NatureCNN((4, 84, 84), 6), torch.randint(0, 255, (8, 4, 84, 84), dtype=torch.uint8)),
    ],
)
@pytest.mark.kernels
def test_low_rank_population_forwards_are_the_same_bits_at_any_thread_count(network, inputs):
    """The factored low-rank path (shared products in oneDNN, factor terms beside them)."""
    from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig

    from neuroplug.population.lowrank import lowrank_for
    from neuroplug.population.members import Population

    size = len(inputs)
    center = network.initial_params(torch.Generator().manual_seed(0))
    population = Population(
        bases=center.unsqueeze(0),
        base_index=torch.zeros(size, dtype=torch.int64),
        scale=torch.full((size,), 0.05),
        seed=torch.arange(size, dtype=torch.int64),
        lowrank=lowrank_for(network.layout, 4, min_size=1024),
    )
    backend = TorchBackend(TorchBackendConfig(name="torch", device="cpu", tile_rows=8), network)
    backend.load(population)
    outputs = []
    for count in (1, 2, 3):
        torch.set_num_threads(count)
        outputs.append(backend.forward(torch.arange(size), inputs))
    assert all(torch.equal(outputs[0], other) for other in outputs[1:])


@pytest.mark.kernels
def test_cma_es_ends_in_the_same_state_whatever_the_load_does_to_the_thread_count(
    compose, tmp_path, monkeypatch
):
    # CMA-ES's products and eigendecomposition give other bits at another thread count:
    # the algorithm's math runs at the run's fixed count (TorchThreads.fixed) while the
    # load moves the population's forwards between 1 and 2 threads.
    from itertools import cycle

    from neuroplug.app import run_job
    from neuroplug.testing.resume_check import same
    from neuroplug.training.checkpoint import load_checkpoint

    overrides = ["algo=cma_es", "net.hidden_sizes=[16]", "algo.population_size=16"]
    overrides += ["run.max_generations=5", "run.stop_when_solved=false", "logger=none"]
    states = []
    for name, counts in (("steady", cycle([2])), ("loaded", cycle([1, 2, 1, 1, 2]))):
        monkeypatch.setattr(TorchThreads, "choose", lambda self, counts=counts: next(counts))
        run_job(compose([*overrides, f"run.output_dir={tmp_path / name}"]))
        states.append(load_checkpoint(tmp_path / name))
    assert same(states[0]["algorithm"], states[1]["algorithm"])
    assert same(states[0]["counters"], states[1]["counters"])


@pytest.mark.kernels
def test_cem_rl_ends_in_the_same_state_while_its_td3_steps_follow_the_load(
    compose, tmp_path, monkeypatch
):
    # The TD3 steps inside CEM-RL's ask step out of the fixed count (follow_the_load):
    # at a fixed 2 threads they ran ~9x slower beside one busy process. Where the CPU's
    # products give the same bits at 1 and 2 threads they follow the load, elsewhere they
    # run on one thread: either way the run ends where a steady one does.
    from itertools import cycle

    from neuroplug_learners.td3 import TD3Update

    from neuroplug.app import run_job
    from neuroplug.testing.resume_check import same
    from neuroplug.training.checkpoint import load_checkpoint

    overrides = ["algo=cem_rl", "env=pendulum", "env.max_episode_steps=50"]
    overrides += ["net.hidden_sizes=[16]", "algo.critic_hidden=[32,32]", "algo.batch_size=32"]
    overrides += ["algo.population_size=4", "algo.learning_starts=200", "logger=none"]
    overrides += ["algo.actor_steps_per_env_step=0.2", "run.max_generations=4"]
    overrides += ["run.eval_interval=0"]
    seen_in_steps = []
    critic_step = TD3Update.critic_step

    def counting_critic_step(self, *args):
        seen_in_steps.append(torch.get_num_threads())
        return critic_step(self, *args)

    monkeypatch.setattr(TD3Update, "critic_step", counting_critic_step)
    states = []
    for name, counts in (("steady", cycle([2])), ("loaded", cycle([1, 2, 1, 1, 2]))):
        seen_in_steps.clear()
        monkeypatch.setattr(TorchThreads, "choose", lambda self, counts=counts: next(counts))
        run_job(compose([*overrides, f"run.output_dir={tmp_path / name}"]))
        states.append(load_checkpoint(tmp_path / name))
    from neuroplug.runtime.devices import products_ignore_thread_count

    if products_ignore_thread_count(2):
        assert set(seen_in_steps) == {1, 2}  # the loaded run's steps did move between counts
    else:
        assert set(seen_in_steps) == {1}
    assert same(states[0]["algorithm"], states[1]["algorithm"])
    assert same(states[0]["counters"], states[1]["counters"])


def test_a_run_computes_with_denormals_flushed_to_zero(compose):
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.training.components import build_components

    torch.set_flush_denormal(False)
    tiny = torch.tensor([1e-30])
    assert float(tiny * 1e-10) > 0  # a denormal result, kept
    build_components(typed_experiment(compose(["algo=es", "env=cartpole"])))
    assert float(tiny * 1e-10) == 0.0  # what every process of a run computes with


@pytest.fixture
def restored_matmul_precision():
    """The process's float32 product precision, put back after the test."""
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


def test_a_run_sets_its_matmul_precision_and_the_next_run_its_own(
    compose, restored_matmul_precision
):
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.training.components import build_components

    build_components(typed_experiment(compose(["algo=es", "run.matmul_precision=medium"])))
    assert torch.get_float32_matmul_precision() == "medium"
    build_components(typed_experiment(compose(["algo=es"])))
    assert torch.get_float32_matmul_precision() == "highest"  # not left over from the last


def test_medium_precision_is_classified_by_what_the_product_does():
    generator = torch.Generator().manual_seed(1)
    left, right = (
        torch.randn(32, 128, generator=generator),
        torch.randn(128, 32, generator=generator),
    )
    exact = left @ right
    rounded = (left.bfloat16().double() @ right.bfloat16().double()).float()
    reordered = (left.double() @ right.double()).float()  # another float32-exact path
    assert classify_medium_precision(exact, exact.clone(), rounded) == "unchanged"
    assert classify_medium_precision(exact, rounded.clone(), rounded) == "bfloat16"
    assert classify_medium_precision(exact, reordered, rounded) == "float32"


@pytest.mark.kernels
def test_the_start_up_line_says_what_medium_was_measured_to_do_on_this_cpu(
    restored_matmul_precision,
):
    """Whatever oneDNN chooses on this CPU, the line says that and nothing else."""
    torch.set_float32_matmul_precision("high")
    measured = measure_medium_precision()
    assert torch.get_float32_matmul_precision() == "high"  # measuring put it back
    generator = torch.Generator().manual_seed(2)
    left, right = (
        torch.randn(64, 256, generator=generator),
        torch.randn(256, 64, generator=generator),
    )
    torch.set_float32_matmul_precision("highest")
    exact = left @ right
    torch.set_float32_matmul_precision("medium")
    reduced = left @ right
    rounded = (left.bfloat16().double() @ right.bfloat16().double()).float()
    assert measured.kind == classify_medium_precision(exact, reduced, rounded)
    line = describe_matmul_precision("medium", torch.device("cpu"))
    said = {"bfloat16": "bfloat16-rounded inputs", "float32": "another float32 path"}
    assert said.get(measured.kind, "no change") in line
    assert measured.speedup > 0


def test_the_start_up_line_says_what_a_reduced_precision_does():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert describe_matmul_precision("highest", cpu) == ""
    assert "TF32" in describe_matmul_precision("medium", cuda)
    assert "stay float32" in describe_matmul_precision("high", cpu)
    for kind, words in (
        ("bfloat16", "bfloat16-rounded inputs"),
        ("float32", "another float32 path"),
        ("unchanged", "no change"),
    ):
        assert words in MediumPrecision(kind, 1e-4, 1.5).describe()
