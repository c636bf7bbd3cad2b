"""``backend=triton`` as a whole: same outputs as ``backend=torch``, its errors, a tiny run.

Without a GPU the kernels run on Triton's CPU interpreter (switched on before triton is
imported); shapes stay tiny because the interpreter is slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton")

from neuroplug_backends.torch_backend import TorchBackend, TorchBackendConfig  # noqa: E402
from neuroplug_triton.backend import (  # noqa: E402
    TritonBackend,
    TritonBackendConfig,
    triton_device,
)

from neuroplug.errors import ConfigError  # noqa: E402
from neuroplug.nets.mlp import MLP  # noqa: E402
from neuroplug.nets.nature_cnn import NatureCNN  # noqa: E402
from neuroplug.population.lowrank import lowrank_for  # noqa: E402
from neuroplug.population.members import InitDraws, Population  # noqa: E402

TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def _population(network, size=6, num_bases=2, lowrank=None, sigma=0.1):
    generator = torch.Generator().manual_seed(size)
    bases = torch.stack([network.initial_params(generator) for _ in range(num_bases)])
    return Population(
        bases=bases,
        base_index=torch.arange(size) % num_bases,
        scale=sigma * (torch.rand(size, generator=generator) - 0.5),
        seed=torch.randint(0, 2**31 - 1, (size,), generator=generator),
        lowrank=lowrank,
    )


def _both(network, population, **config):
    reference = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    triton = TritonBackend(TritonBackendConfig(name="triton", **config), network)
    reference.load(population)
    triton.load(population)
    return reference, triton


@pytest.mark.parametrize(
    ("config", "lowrank_rank", "num_bases"),
    [
        ({"mode": "noise"}, 0, 2),
        ({"mode": "dense"}, 0, 2),
        ({"mode": "dense", "dense_dtype": "bfloat16"}, 0, 1),
        ({"mode": "noise"}, 2, 1),  # ES-style low-rank population
        ({"mode": "noise"}, 1, 2),
    ],
)
def test_mlp_matches_the_torch_backend_on_alive_members(config, lowrank_rank, num_bases):
    network = MLP(5, [16, 12], 3, "tanh")
    lowrank = lowrank_for(network.layout, lowrank_rank, 16) if lowrank_rank else None
    population = _population(network, num_bases=num_bases, lowrank=lowrank)
    reference, triton = _both(network, population, **config)
    alive = torch.tensor([5, 2, 3])
    observations = torch.randn(3, 5)
    if config.get("dense_dtype") == "bfloat16":
        # The reference with the same rounded weights the bf16 kernel reads.
        rounded = population.materialize().to(torch.bfloat16).float()
        reference.load(Population.dense(rounded))
    expected = reference.forward(alive, observations)
    torch.testing.assert_close(triton.forward(alive, observations).cpu(), expected, **TOLERANCE)


@pytest.mark.parametrize("lowrank_rank", [0, 2])
def test_several_observations_per_member_give_one_output_each(lowrank_rank):
    network = MLP(4, [8], 2, "relu")
    lowrank = lowrank_for(network.layout, lowrank_rank, 16) if lowrank_rank else None
    population = _population(network, num_bases=1, lowrank=lowrank)
    reference, triton = _both(network, population)
    alive = torch.tensor([1, 4])
    observations = torch.randn(2, 3, 4)  # three observations for each alive member
    outputs = triton.forward(alive, observations).cpu()
    assert outputs.shape == (2, 3, 2)
    for step in range(3):
        expected = reference.forward(alive, observations[:, step])
        torch.testing.assert_close(outputs[:, step], expected, **TOLERANCE)


@pytest.mark.parametrize(
    ("input_shape", "padding", "mode"),
    [((1, 36, 36), "valid", "noise"), ((2, 11, 10), "same", "dense")],
)
def test_nature_cnn_matches_the_torch_backend_on_uint8_frames(input_shape, padding, mode):
    network = NatureCNN(input_shape, 4, padding)
    population = _population(network, size=4, sigma=0.02)
    reference, triton = _both(network, population, mode=mode)
    alive = torch.tensor([3, 0])
    frames = torch.randint(0, 256, (2, *input_shape), dtype=torch.uint8)
    expected = reference.forward(alive, frames)
    torch.testing.assert_close(triton.forward(alive, frames).cpu(), expected, **TOLERANCE)


def _described_population(network, bases, sigma, lowrank=None, size=6, num_bases=2):
    """A population in the new member forms: init-draw bases and/or a per-parameter sigma."""
    generator = torch.Generator().manual_seed(7)

    def initializer(seed: int) -> torch.Tensor:
        return network.initial_params(torch.Generator().manual_seed(seed))

    seeds = torch.tensor([101, 202][:num_bases])
    if bases == "init_draws":
        base_params = InitDraws(seeds, initializer, network.num_params)
    else:
        base_params = torch.stack([initializer(int(seed)) for seed in seeds])
    return Population(
        bases=base_params,
        base_index=torch.arange(size) % num_bases,
        scale=torch.rand(size, generator=generator) * 0.2 + 0.05,
        seed=torch.randint(0, 2**31 - 1, (size,), generator=generator),
        lowrank=lowrank,
        sigma=(
            torch.rand(num_bases, network.num_params, generator=generator) * 1.9 + 0.1
            if sigma
            else None
        ),
    )


@pytest.mark.parametrize(
    ("bases", "sigma", "lowrank_rank"),
    [
        ("tensor", True, 0),  # SNES / PGPE style: sigma in the kernels
        ("init_draws", False, 0),  # GA generation 0 / random search: built on load
        ("init_draws", True, 0),
        ("tensor", True, 2),  # sigma with low-rank matrices: runs as dense float32
    ],
)
def test_noise_mode_builds_what_materialize_builds_for_an_mlp(bases, sigma, lowrank_rank):
    network = MLP(5, [16, 12], 3, "tanh")
    lowrank = lowrank_for(network.layout, lowrank_rank, 16) if lowrank_rank else None
    population = _described_population(network, bases, sigma, lowrank)
    triton = TritonBackend(TritonBackendConfig(name="triton", mode="noise"), network)
    triton.load(population)
    alive = torch.tensor([5, 2, 3, 0])
    observations = torch.randn(4, 5)
    expected = network.forward_population(population.materialize(alive), observations)
    torch.testing.assert_close(triton.forward(alive, observations).cpu(), expected, **TOLERANCE)


@pytest.mark.parametrize(
    ("bases", "sigma", "lowrank_rank"),
    [
        ("tensor", True, 0),
        ("init_draws", True, 0),
        ("tensor", False, 2),  # low-rank convolution kernels: runs as dense float32
    ],
)
def test_noise_mode_builds_what_materialize_builds_for_a_nature_cnn(bases, sigma, lowrank_rank):
    network = NatureCNN((1, 36, 36), 4, "valid")
    lowrank = lowrank_for(network.layout, lowrank_rank, 256) if lowrank_rank else None
    if lowrank is not None:
        assert network.layout.slots["conv1.w"].offset in [m.offset for m in lowrank.matrices]
    population = _described_population(network, bases, sigma=sigma, lowrank=lowrank, size=4)
    triton = TritonBackend(TritonBackendConfig(name="triton", mode="noise"), network)
    triton.load(population)
    alive = torch.tensor([3, 0])
    frames = torch.randint(0, 256, (2, 1, 36, 36), dtype=torch.uint8)
    expected = network.forward_population(population.materialize(alive), frames)
    torch.testing.assert_close(triton.forward(alive, frames).cpu(), expected, **TOLERANCE)


def test_without_triton_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # makes `import triton` fail
    with pytest.raises(ConfigError, match="needs triton") as error:
        TritonBackend(TritonBackendConfig(name="triton"), MLP(2, [2], 2, "tanh"))
    assert "pip install 'neuroplug[triton]'" in str(error.value)
    assert "backend=torch" in str(error.value)


def test_loading_the_backend_plugin_does_not_import_triton():
    # neuroplug loads every backend at start-up to store its config schema.
    script = (
        "import sys\n"
        "from neuroplug import registry\n"
        "registry.load('backends', 'triton')\n"
        "assert 'triton' not in sys.modules, 'triton was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_without_gpu_or_interpreter_the_error_says_what_to_use(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    monkeypatch.delenv("TRITON_INTERPRET")
    with pytest.raises(ConfigError, match="needs a CUDA GPU") as error:
        triton_device("auto")
    assert "backend=torch" in str(error.value)
    assert "TRITON_INTERPRET=1" in str(error.value)


def test_unknown_mode_lists_the_modes():
    with pytest.raises(ConfigError, match="backend.mode.*auto, noise, dense"):
        TritonBackendConfig(name="triton", mode="fast")


def test_forward_before_load_is_an_error():
    backend = TritonBackend(TritonBackendConfig(name="triton"), MLP(2, [2], 2, "tanh"))
    with pytest.raises(RuntimeError, match="before load"):
        backend.forward(torch.tensor([0]), torch.zeros(1, 2))


def _neuroplug(args, env, cwd):
    return subprocess.run(
        [sys.executable, "-m", "neuroplug", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=240,
    )


TINY_RUN = [
    "algo=es",
    "env=cartpole",
    "env.max_episode_steps=10",
    "backend=triton",
    "logger=none",
    "net.hidden_sizes=[8]",
    "algo.population_size=4",
    "run.max_generations=2",
    "run.eval_interval=1",
    "run.eval_episodes=1",
]


def test_tiny_lowrank_es_run_trains_with_the_triton_backend(tmp_path):
    from neuroplug.training.checkpoint import load_checkpoint

    # The interpreter only where there is no GPU: a GPU machine runs the compiled kernels
    # (and its numpy need not suit the interpreter).
    env = dict(os.environ)
    if not torch.cuda.is_available():
        env["TRITON_INTERPRET"] = "1"
    overrides = ["algo.perturbation=lowrank", "algo.rank=2", "algo.lowrank_min_size=16"]
    done = _neuroplug([*TINY_RUN, *overrides, f"run.output_dir={tmp_path}"], env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    state = load_checkpoint(Path(tmp_path))
    assert state["generation"] == 2
    assert torch.isfinite(state["algorithm"]["algorithm"]["center"]).all()


def test_triton_run_without_gpu_or_interpreter_stops_with_the_fallback(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    done = _neuroplug([*TINY_RUN, f"run.output_dir={tmp_path}"], env, tmp_path)
    assert done.returncode != 0
    assert "backend=triton needs a CUDA GPU" in done.stderr
    assert "backend=torch" in done.stderr
    assert not (tmp_path / "checkpoints").exists()


def test_noise_mode_runs_unperturbed_populations_as_their_bases():
    network = MLP(3, [8], 2, "elu")
    members = torch.randn(4, network.num_params)
    reference, triton = _both(network, Population.dense(members), mode="noise")
    alive = torch.tensor([3, 1])
    observations = torch.randn(2, 3)
    expected = reference.forward(alive, observations)
    torch.testing.assert_close(triton.forward(alive, observations).cpu(), expected, **TOLERANCE)


def test_dense_mode_materialises_big_populations_a_chunk_at_a_time(monkeypatch):
    import neuroplug_triton.backend as triton_backend

    network = MLP(3, [4], 2, "tanh")
    monkeypatch.setattr(triton_backend, "_MATERIALIZE_CHUNK_BYTES", 2 * 4 * network.num_params)
    population = _population(network, size=5)  # chunks of 2, 2 and 1 members
    reference, triton = _both(network, population, mode="dense")
    alive = torch.tensor([4, 2, 0])
    observations = torch.randn(3, 3)
    expected = reference.forward(alive, observations)
    torch.testing.assert_close(triton.forward(alive, observations).cpu(), expected, **TOLERANCE)


def test_backend_triton_is_found_through_its_entry_point(compose):
    from neuroplug import registry

    assert registry.load("backends", "triton") is TritonBackend
    config = compose(["backend=triton", "backend.mode=dense", "backend.dense_dtype=bfloat16"])
    assert (config.backend.name, config.backend.mode) == ("triton", "dense")
    assert config.backend.dense_dtype == "bfloat16"


def test_auto_mode_materialises_what_fits_and_rebuilds_what_does_not():
    """auto: dense float32 (measured fastest on an H100) while the members fit the budget,
    the in-kernel noise beyond it, the factored kernel for low-rank populations; the
    outputs are the same members either way."""
    network = MLP(3, [8], 2, "tanh")
    population = _population(network, size=6, num_bases=1, sigma=0.2)
    member_mb = network.num_params * 4 / 2**20
    fits = TritonBackend(TritonBackendConfig(name="triton", max_materialized_mb=1), network)
    assert 6 * member_mb < 1
    fits.load(population)
    assert not fits._perturb and fits._params.shape == (6, network.num_params)
    assert fits.plan(6) == ""
    too_big = TritonBackend(TritonBackendConfig(name="triton", max_materialized_mb=1), network)
    huge = int(2 / member_mb)
    assert "noise" in too_big.plan(huge) and "backend.max" not in too_big.plan(huge)
    lowrank = _population(
        network, size=6, num_bases=1, lowrank=lowrank_for(network.layout, 2, min_size=1)
    )
    factored = TritonBackend(TritonBackendConfig(name="triton"), network)
    factored.load(lowrank)
    assert factored._lowrank is not None and factored._params.shape[0] == 1
    reference = TorchBackend(TorchBackendConfig(name="torch", device="cpu"), network)
    for backend, members in ((fits, population), (factored, lowrank)):
        reference.load(members)
        alive, observations = torch.tensor([4, 0, 2]), torch.randn(3, 3)
        expected = reference.forward(alive, observations)
        torch.testing.assert_close(
            backend.forward(alive, observations).cpu(), expected, **TOLERANCE
        )


@pytest.mark.parametrize("mode", ["auto", "noise"])
def test_the_triton_backend_honours_the_backend_contract(mode):
    from neuroplug.testing import check_backend_contract

    config = TritonBackendConfig(name="triton", mode=mode)
    check_backend_contract(TritonBackend, config, networks=[MLP(5, [16], 3, "tanh")])


def test_es_on_atari_leaves_its_virtual_batch_norm_off_on_triton_and_says_why(compose):
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.training.components import build_components

    parts = build_components(typed_experiment(compose(["algo=es", "env=pong", "backend=triton"])))
    assert parts.config.net.vbn is False and not parts.network.normalized
    assert "backend=triton runs none" in parts.network_note


def test_a_network_reading_measurements_is_refused_naming_the_backend():
    network = NatureCNN((1, 37, 36), 4, "valid", measurements=3)
    with pytest.raises(ConfigError, match="backend: .*joins 3 measurements") as error:
        TritonBackend(TritonBackendConfig(name="triton"), network)
    assert "backend=torch" in str(error.value)
