"""algo=cma_mae: its separable CMA-ES emitters minimise a sphere, thresholds anneal at the
archive learning rate (alpha = 1: CMA-ME's elitism), a stalled emitter restarts at an
elite, the result archive's elites hold the mean of every episode they played on a noisy
task, and the archive, thresholds, emitters and re-evaluation resume exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_algorithms.cma_mae import CMAMAE, SeparableEmitter
from neuroplug_algorithms.cma_mae_config import CMAMAEConfig
from noisy_archive_task import NoisyArchiveTask

from neuroplug.errors import ConfigError
from neuroplug.evolution.context import algorithm_context
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact
from neuroplug.testing.synthetic import VectorNetwork, synthetic_result

CARTPOLE = [
    "algo=cma_mae",
    "env=cartpole",
    "env.max_episode_steps=60",
    "net.hidden_sizes=[8]",
    "algo.behavior=final_obs",
    "algo.archive=cvt",
    "algo.cells=[32]",
    "algo.bounds=[[-2.5,2.5]]",
    "algo.emitters=2",
    "algo.emitter_batch=8",
]


def test_a_separable_emitter_minimises_a_sphere():
    rng = np.random.default_rng(0)
    emitter = SeparableEmitter(torch.ones(10), 0.5, 12)
    for _ in range(300):
        solutions = emitter.ask(torch.from_numpy(rng.standard_normal((12, 10))))
        emitter.tell(solutions, np.argsort(solutions.square().sum(1).numpy()))
    assert float(emitter.mean.norm()) < 1e-4


def _algorithm(alpha: float) -> CMAMAE:
    config = CMAMAEConfig(
        name="cma_mae", emitters=1, emitter_batch=4, bounds=[[-1.0, 1.0]], cells=[2],
        archive_learning_rate=alpha, qd_offset=-10.0,
    )  # fmt: skip
    network = VectorNetwork(2)
    return CMAMAE(config, algorithm_context(network, seed=0))


@pytest.mark.parametrize("alpha", [1.0, 0.1])
def test_thresholds_anneal_at_the_archive_learning_rate(alpha):
    algorithm = _algorithm(alpha)
    population = algorithm.ask()
    behaviors = np.array([[-0.9, -0.9], [-0.8, -0.8], [0.9, 0.9], [0.7, 0.7]])[:, None, :]
    algorithm.tell(population, synthetic_result([1.0, 3.0, 2.0, -20.0], behaviors=behaviors))
    cell_low = algorithm.archive.index(np.array([[-0.9, -0.9]]))[0]
    cell_high = algorithm.archive.index(np.array([[0.9, 0.9]]))[0]
    # In order: -10 -> 1 -> 3 (alpha 1); -10 -> -8.9 -> -7.71 (alpha 0.1).
    expected_low = 3.0 if alpha == 1 else (1 - alpha) * ((1 - alpha) * -10 + alpha * 1) + alpha * 3
    assert algorithm.thresholds[cell_low] == pytest.approx(expected_low)
    assert algorithm.thresholds[cell_high] == pytest.approx(-10 + alpha * 12)  # -20 is refused
    assert algorithm.archive.fitness[cell_low] == 3.0  # the result archive keeps the best


def test_an_emitter_that_adds_nothing_restarts_at_an_elite():
    algorithm = _algorithm(1.0)
    behaviors = np.zeros((4, 1, 2))
    population = algorithm.ask()
    algorithm.tell(population, synthetic_result([5.0, 4.0, 3.0, 2.0], behaviors=behaviors))
    assert algorithm.restarts == 0
    population = algorithm.ask()
    algorithm.tell(population, synthetic_result([1.0, 1.0, 1.0, 1.0], behaviors=behaviors))
    assert algorithm.restarts == 1
    assert torch.equal(
        algorithm.emitters[0].mean.float(), algorithm.archive.params[algorithm.archive.best()]
    )


def test_the_result_archive_holds_the_mean_of_every_episode_its_elites_played():
    config = CMAMAEConfig(
        name="cma_mae", emitters=2, emitter_batch=4, bounds=[[-0.5, 0.5]], cells=[4],
        reevaluation_episodes=3, reevaluate_every=2,
    )  # fmt: skip
    check_algorithm_contract(CMAMAE, config)
    algorithm = CMAMAE(config, algorithm_context(VectorNetwork(4), seed=0))
    task = NoisyArchiveTask()
    rounds = [len(task.generation(algorithm)) for _ in range(4)]
    assert rounds == [1, 2, 1, 2]
    archive = algorithm.archive
    for cell in archive.occupied:
        returns, descriptors = task.episodes_of(archive.params[cell])
        assert archive.episodes[cell] == len(returns) >= 1 + 3
        assert archive.fitness[cell] == pytest.approx(returns.mean(), rel=1e-12)
        assert np.allclose(archive.descriptors[cell], descriptors.mean(axis=0), rtol=1e-12)


def test_cma_mae_resumes_exactly(compose, tmp_path):
    # Re-evaluated at generation 2, before the checkpoint, and 4, after it.
    overrides = [*CARTPOLE, "algo.reevaluate_every=2"]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path, generations=4, stop_at=2)
    assert len(left["algorithm"]["algorithm"]["emitters"]) == 2
    assert min(left["algorithm"]["algorithm"]["archive"]["episodes"]) >= 1 + 4  # all, at 4


def test_a_batch_that_is_not_the_emitters_is_refused():
    with pytest.raises(ConfigError, match="2 emitters of 8") as raised:
        CMAMAEConfig(name="cma_mae", emitters=2, emitter_batch=8, population_size=10)
    assert raised.value.field == "algo.population_size"
