"""algo=map_elites: grid and CVT cells, an elite per cell kept only when beaten, the archive
filling on a real task, an exact resume of the archive, and bad input refused before
training."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from neuroplug_algorithms.map_elites import MAPElites
from neuroplug_algorithms.map_elites_config import MAPElitesConfig

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.evolution.archive import CVTArchive, GridArchive
from neuroplug.population.members import Population
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact, same
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
    run_job(
        compose(
            [*CARTPOLE, "run.max_generations=6", "logger=console", f"run.output_dir={tmp_path}"]
        )
    )
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
    ],
)
def test_bad_input_is_refused_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*CARTPOLE, *overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
