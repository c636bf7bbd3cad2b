"""algo=map_elites: grid and CVT cells, an elite per cell kept only when beaten, the archive
filling on a real task, an exact resume of the archive, elites re-evaluated on a noisy
task (their fitness the mean of every episode they played, the re-evaluated QD-score
logged, resumed exactly), and bad input refused before training."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from neuroplug_algorithms.map_elites import MAPElites
from neuroplug_algorithms.map_elites_config import MAPElitesConfig
from noisy_archive_task import NoisyArchiveTask

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.evolution.archive import CVTArchive, GridArchive
from neuroplug.evolution.context import algorithm_context
from neuroplug.population.members import Population
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact, same
from neuroplug.testing.synthetic import VectorNetwork
from neuroplug.tools.plot import archive_of, plot_archive
from neuroplug.training.checkpoint import load_checkpoint

CARTPOLE = [
    "algo=map_elites",
    "env=cartpole",
    "env.max_episode_steps=100",
    "net.hidden_sizes=[16]",
    "algo.behavior=final_obs",
    "algo.archive=cvt",
    "algo.cells=[64]",
    "algo.bounds=[[-2.5,2.5]]",
    "algo.population_size=32",
]


def test_map_elites_honours_the_contract_with_a_grid_and_cvt_cells():
    check_algorithm_contract(MAPElites)
    check_algorithm_contract(
        MAPElites, MAPElitesConfig(name="map_elites", archive="cvt", cells=[20])
    )
    # A re-evaluation is a second round of its generation, checkpointed between them.
    check_algorithm_contract(MAPElites, MAPElitesConfig(name="map_elites", reevaluate_every=2))


def test_a_cell_keeps_the_best_member_that_landed_there():
    archive = GridArchive([4, 2], 3, np.array([[0.0, 4.0], [-1.0, 1.0]]))
    descriptors = np.array([[0.5, -0.5], [0.6, -0.9], [3.9, 0.5], [9.0, 9.0]])
    assert archive.index(descriptors).tolist() == [0, 0, 7, 7]  # outside: the edge cell
    params = torch.arange(12.0).reshape(4, 3)
    assert archive.add(params, np.array([1.0, 2.0, 5.0, 3.0]), descriptors) == {
        "new_cells": 2,
        "improved_cells": 0,
    }
    assert torch.equal(archive.params[0], params[1]) and torch.equal(archive.params[7], params[2])
    # A worse member leaves the elite; a better one replaces it.
    archive.add(params[:1], np.array([1.5]), descriptors[:1])
    assert archive.fitness[0] == 2.0
    assert archive.add(params[:1], np.array([2.5]), descriptors[:1])["improved_cells"] == 1
    metrics = archive.metrics(qd_offset=-1.0)
    assert metrics["qd_score"] == pytest.approx((2.5 + 1) + (5 + 1))
    assert metrics["coverage"] == pytest.approx(2 / 8)


def test_cvt_cells_are_the_nearest_centroid_and_the_same_for_a_seed():
    bounds = np.array([[0.0, 1.0], [0.0, 1.0]])
    first, again = (CVTArchive(16, 2, bounds, seed=3, samples=2000) for _ in range(2))
    assert torch.equal(first.centroids, again.centroids)
    points = np.random.default_rng(0).uniform(0, 1, (50, 2))
    distances = ((points[:, None, :] - first.centroids.numpy()[None]) ** 2).sum(-1)
    assert np.array_equal(first.index(points), distances.argmin(1))
    assert len(np.unique(first.index(points))) > 8  # spread over the square


def test_the_archive_fills_on_cartpole(compose, tmp_path):
    # Without re-evaluation (below) a cell's fitness only ever rises.
    overrides = [*CARTPOLE, "algo.reevaluation_episodes=0", "run.max_generations=6"]
    run_job(compose([*overrides, "logger=console", f"run.output_dir={tmp_path}"]))
    with (tmp_path / "metrics.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    coverage = [float(row["algo/coverage"]) for row in rows]
    qd_score = [float(row["algo/qd_score"]) for row in rows]
    assert coverage[-1] > coverage[0] and qd_score[-1] > qd_score[0], (coverage, qd_score)
    assert all(b >= a for a, b in zip(qd_score, qd_score[1:], strict=False))  # elites only improve
    archive = archive_of(tmp_path)
    assert len(archive["cells"]) == round(coverage[-1] * 64)
    assert archive["names"] == ["final obs[0]", "final obs[1]", "final obs[2]", "final obs[3]"]
    assert plot_archive(archive, tmp_path / "archive.png").stat().st_size > 0


def test_walkers_fill_a_feet_contact_archive_in_the_unit_square(compose, tmp_path):
    # QDax's walker descriptor: gymnasium's Walker2d with the feet-contact wrapper; the
    # descriptor's range is [0, 1], so no algo.bounds.
    pytest.importorskip("mujoco")
    overrides = ["algo=map_elites", "env=gymnasium", "env.id=Walker2d-v5"]
    overrides += ["env.wrappers=[neuroplug.envs.feet_contact:FeetContactRates]"]
    overrides += ["algo.behavior=feet_contact", "algo.cells=[8]", "algo.population_size=16"]
    overrides += ["net.hidden_sizes=[16]", "run.max_generations=3", "run.eval_interval=0"]
    run_job(compose([*overrides, "logger=console", f"run.output_dir={tmp_path}"]))
    archive = archive_of(tmp_path)
    descriptors = np.asarray(archive["descriptors"])  # the occupied cells' own
    assert len(archive["cells"]) >= 4  # 48 walkers, more than a few gaits
    assert descriptors.min() >= 0.0 and descriptors.max() <= 1.0


def test_a_descriptor_of_your_own_runs_through_its_entry_point(compose, tmp_path):
    overrides = [*CARTPOLE, "algo.behavior=descriptors:cart_and_pole", "algo.bounds=[[-2.5,2.5]]"]
    overrides += ["run.max_generations=2", "logger=console", f"run.output_dir={tmp_path}"]
    run_job(compose(overrides))
    archive = archive_of(tmp_path)
    assert np.asarray(archive["descriptors"]).shape[1] == 2  # cart position and pole angle
    assert len(archive["cells"]) > 1


@pytest.mark.parametrize(
    "algorithm",
    [
        ["algo=map_elites", "algo.population_size=16"],
        ["algo=cma_mae", "algo.emitters=2", "algo.emitter_batch=8"],
    ],
    ids=["map_elites", "cma_mae"],
)
def test_every_scheduler_fills_the_same_archive(compose, tmp_path, algorithm):
    # Refilled lanes (5 envs for 16 members) and descriptors gathered however the
    # schedule played the episodes: the same cells, elites and thresholds.
    overrides = [*CARTPOLE[1:-1], *algorithm, "run.max_generations=2"]  # its own batch
    overrides += ["scheduler.max_envs=5", "run.eval_episodes=2", "logger=none"]
    overrides += ["algo.reevaluate_every=1"]  # the elites' round too
    states = {}
    for name in ("serial", "threaded", "pipelined"):
        run_dir = tmp_path / name
        run_job(compose([*overrides, f"scheduler={name}", f"run.output_dir={run_dir}"]))
        states[name] = load_checkpoint(run_dir)
    assert len(states["serial"]["algorithm"]["algorithm"]["archive"]["cells"]) > 1
    for name in ("threaded", "pipelined"):
        assert same(states["serial"]["algorithm"], states[name]["algorithm"]), name
        assert same(states["serial"]["last_eval"], states[name]["last_eval"]), name


def test_map_elites_resumes_exactly_with_its_archive(compose, tmp_path):
    left, _ = check_resume_is_exact(compose, CARTPOLE, tmp_path, generations=4, stop_at=2)
    state = left["algorithm"]["algorithm"]
    archive, lineage = state["archive"], state["lineage"]
    assert len(archive["cells"]) > 1
    # Iso+LineDD elites are checkpointed as lineage nodes (recipes), never as weights.
    assert "params" not in archive and "best_params" not in left["algorithm"]
    assert not lineage["weights"] and set(archive["genomes"]) <= set(lineage["ids"].tolist())
    assert len(lineage["ids"]) < 4 * 32  # the dead ends were forgotten


def test_an_elite_holds_the_mean_of_every_episode_it_played():
    # Offspring averaged over their 2 episodes, the elites re-evaluated over 3 fresh ones
    # every other generation, on a task whose every return and descriptor is a draw.
    config = MAPElitesConfig(
        name="map_elites", bounds=[[-0.5, 0.5]], cells=[4], population_size=16,
        episodes_per_member=2, reevaluation_episodes=3, reevaluate_every=2,
    )  # fmt: skip
    algorithm = MAPElites(config, algorithm_context(VectorNetwork(4), seed=0))
    task = NoisyArchiveTask()
    rounds = [len(task.generation(algorithm)) for _ in range(6)]
    assert rounds == [1, 2, 1, 2, 1, 2]
    archive = algorithm.archive
    for cell in archive.occupied:
        returns, descriptors = task.episodes_of(archive.params[cell])
        assert archive.episodes[cell] == len(returns)
        assert archive.fitness[cell] == pytest.approx(returns.mean(), rel=1e-12)
        assert np.allclose(archive.descriptors[cell], descriptors.mean(axis=0), rtol=1e-12)
        assert archive.index(archive.descriptors[cell : cell + 1])[0] == cell
    assert archive.episodes[archive.occupied].min() >= 2 + 3  # all re-evaluated at the end


def test_the_reevaluated_qd_score_is_logged_beside_the_stored_one(compose, tmp_path):
    overrides = [*CARTPOLE, "algo.reevaluate_every=2", "run.max_generations=4"]
    run_job(compose([*overrides, "logger=console", f"run.output_dir={tmp_path}"]))
    with (tmp_path / "metrics.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    reevaluated = [row for row in rows if row["algo/qd_score_reevaluated"]]
    assert [int(row["generation"]) for row in reevaluated] == [2, 4]
    assert all(row["evaluation_rounds"] == "2" and row["algo/coverage_reevaluated"]
               for row in reevaluated)  # fmt: skip
    # CartPole's start states are draws: the elites' fresh episodes are not the ones
    # that won them their cells.
    assert any(
        row["algo/qd_score_reevaluated"] != row["algo/qd_score_before_reevaluation"]
        for row in reevaluated
    )
    # The last row is the checkpoint's archive, every elite the mean of its episodes.
    archive = archive_of(tmp_path)
    assert float(rows[-1]["algo/qd_score"]) == pytest.approx(np.sum(archive["fitness"]))
    assert float(rows[-1]["algo/coverage"]) == len(archive["cells"]) / 64
    assert min(archive["episodes"]) >= 1 + 4  # generation 4's re-evaluation: 4 more each


def test_map_elites_resumes_exactly_while_reevaluating(compose, tmp_path):
    # The automatic schedule (8 elites x 2 episodes: every 160 offspring episodes, 5
    # generations of 32) re-evaluates after the resume at generation 3, on the clock and
    # the episode counts the checkpoint kept.
    overrides = [*CARTPOLE, "algo.cells=[8]", "algo.reevaluation_episodes=2"]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path, generations=6, stop_at=3)
    assert max(left["algorithm"]["algorithm"]["archive"]["episodes"]) >= 1 + 2


def _algorithm_after(compose, overrides: list[str], run_dir) -> MAPElites:
    """A run of ``overrides`` into ``run_dir``, its algorithm rebuilt from the checkpoint
    (the elites replayed from their genomes)."""
    from neuroplug.experiment.typed import Experiment
    from neuroplug.training.components import build_components

    config = compose([*overrides, "logger=none"])
    config.run.output_dir = str(run_dir)
    run_job(config)
    state = load_checkpoint(run_dir)
    algorithm = build_components(Experiment.from_yaml(state["config"])).algorithm
    algorithm.load_state_dict(state["algorithm"])
    return algorithm


def _noise(seed: int, size: int) -> torch.Tensor:
    """``eps(seed)``, the ``(size,)`` direction a member with that seed moves along."""
    return Population(
        bases=torch.zeros(1, size), base_index=torch.zeros(1, dtype=torch.int64),
        scale=torch.ones(1), seed=torch.tensor([seed]),
    ).materialize(device="cpu")[0]  # fmt: skip


def test_an_iso_line_elite_replays_from_its_parents(compose, tmp_path):
    from neuroplug.evolution.lineage import ISO_LINE

    algorithm = _algorithm_after(compose, [*CARTPOLE, "run.max_generations=3"], tmp_path)
    archive, lineage = algorithm.archive, algorithm.lineage
    # A child of the last generation: its weights are Iso+LineDD of its parents' weights.
    child = max(archive.genomes[cell] for cell in archive.occupied)
    kind, parent, partner, seed, line = lineage.nodes[child]
    assert kind == ISO_LINE
    x_p, x_q = lineage.build([parent, partner])
    config = algorithm.config
    expected = x_p + config.iso_sigma * _noise(seed, len(x_p))
    expected += config.line_sigma * line * (x_q - x_p)
    cell = next(cell for cell in archive.occupied if archive.genomes[cell] == child)
    assert torch.allclose(archive.params[cell], expected, atol=1e-6)


GAUSSIAN = [*CARTPOLE, "algo.variation=gaussian", "algo.sigma=0.05", "algo.cells=[32]"]


def test_gaussian_variation_checkpoints_seed_chains_and_resumes_exactly(compose, tmp_path):
    left, _ = check_resume_is_exact(compose, GAUSSIAN, tmp_path, generations=4, stop_at=2)
    archive = left["algorithm"]["algorithm"]["archive"]
    assert "params" not in archive and "best_params" not in left["algorithm"]
    chains = archive["genomes"]
    assert len(chains) == len(archive["cells"]) > 1
    # Every chain: an init seed, the first generation's spread, one seed per mutation.
    assert all(2 <= len(chain) <= 5 for chain in chains)  # 4 generations
    assert max(len(chain) for chain in chains) > 2  # offspring of elites took cells


def test_a_chain_rebuilds_the_elite_it_names(compose, tmp_path):
    algorithm = _algorithm_after(compose, [*GAUSSIAN, "run.max_generations=3"], tmp_path)
    archive = algorithm.archive
    cells = archive.occupied
    # Rebuilt from the chains, the elites are the weights the run evaluated: replaying a
    # chain by hand, init then mutations, lands on the same tensor bit for bit.
    cell = int(cells[np.argmax([len(archive.genomes[c]) for c in cells])])
    chain = archive.genomes[cell]
    weights = algorithm.fresh_params(chain[0])
    for depth, seed in enumerate(chain[1:], start=1):
        scale = algorithm.config.init_sigma if depth == 1 else algorithm.config.sigma
        weights = weights + scale * _noise(seed, len(weights))
    assert torch.allclose(archive.params[cell], weights, atol=1e-6)
    assert not torch.equal(archive.params[cell], algorithm.fresh_params(chain[0]))


def test_a_final_obs_archive_takes_the_tasks_declared_observation_range(compose, tmp_path):
    # Pendulum declares cos, sin in [-1, 1] and its angular velocity in [-8, 8]: no
    # algo.bounds needed (CartPole's unbounded velocities still need them: below).
    overrides = ["algo=map_elites", "env=pendulum", "algo.behavior=final_obs", "algo.cells=[4]"]
    overrides += ["net.hidden_sizes=[8]", "algo.population_size=8", "run.max_generations=1"]
    algorithm = _algorithm_after(compose, overrides, tmp_path)
    assert algorithm.archive.bounds.tolist() == [[-1, 1], [-1, 1], [-8, 8]]
    assert algorithm.archive.metrics(0.0)["archive_size"] > 0


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["algo.bounds=[[1,1]]"], "algo.bounds", "positive width"),
        (["algo.bounds=null"], "algo.bounds", "the final_obs descriptor .* no known range"),
        (  # what auto chose is named
            ["algo.bounds=null", "algo.behavior=auto"],
            "algo.bounds",
            r"the auto \(final_obs\) descriptor .* no known range",
        ),
        (
            ["algo.archive=grid", "algo.cells=[100000]", "net.hidden_sizes=[256,256]"],
            "algo.cells",
            "GiB",
        ),
        # A grid over CartPole's 4-dimensional descriptor: cells^4, said readably, and the
        # CVT archive named as the way out.
        (
            ["algo.archive=grid", "algo.cells=[1000000]"],
            "algo.cells",
            r"1\.0e\+24 cells .* GiB; .*algo\.archive=cvt",
        ),
        (["algo.bounds=[[0,1],[0,1]]"], "algo.bounds", "4-dimensional"),
        (["algo.variation=cross"], "algo.variation", "iso_line or gaussian"),
        (["algo.reevaluate_every=0"], "algo.reevaluate_every", "got 0"),
        (["algo.reevaluation_episodes=-1"], "algo.reevaluation_episodes", "got -1"),
    ],
)
def test_bad_input_is_refused_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*CARTPOLE, *overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
