"""algo=pga_me: the contract while it learns, PG offspring climbing the critic their parents
sat lower on, the greedy actor in every batch, an exact resume, bad input refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_learners.hybrids.pga_me import PGAME
from neuroplug_learners.hybrids.pga_me_config import PGAMEConfig
from neuroplug_learners.twin_critic import critic_of_actions

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.algorithm_contract import _evaluate, synthetic_context
from neuroplug.testing.resume_check import check_resume_is_exact

PENDULUM = [
    "algo=pga_me",
    "env=pendulum",
    "env.max_episode_steps=50",
    "net.hidden_sizes=[16]",
    "algo.critic_hidden=[32]",
    "algo.behavior=final_obs",
    "algo.bounds=[[-1,1],[-1,1],[-8,8]]",
    "algo.cells=[4]",
    "algo.population_size=8",
    "algo.batch_size=32",
    "algo.pg_steps=20",
    "algo.critic_steps=40",
]


def _config(**settings) -> PGAMEConfig:
    base = dict(name="pga_me", population_size=8, batch_size=8, buffer_size=500, pg_steps=5)
    base |= dict(bounds=[[-1.0, 1.0]], cells=[3])
    return PGAMEConfig(**(base | dict(critic_steps=10, critic_hidden=[8]) | settings))


def test_pga_me_honours_the_algorithm_contract_while_it_learns():
    check_algorithm_contract(PGAME, _config(), generations=3)


def test_pg_offspring_climb_the_critic_and_the_greedy_actor_joins_the_batch():
    from neuroplug.testing.algorithm_contract import _task

    env, network = _task("Pendulum-v1", None)
    algorithm = PGAME(_config(pg_steps=30), synthetic_context(seed=0, network=network, env=env))
    target = torch.zeros(network.num_params)
    for _ in range(2):  # fill the archive and the buffer, train the critics
        population = algorithm.ask()
        algorithm.tell(population, _evaluate(algorithm, population, target))
    parents_before = algorithm.archive.params[torch.from_numpy(algorithm.archive.occupied)]
    population = algorithm.ask().materialize()
    assert len(population) == 8
    assert torch.equal(population[-1], algorithm.greedy.params.detach()[0])
    pg = population[4:7]  # half by Iso+LineDD, then the PG offspring, then the greedy actor
    batch = algorithm.replay.buffer.sample(64, np.random.default_rng(1), torch.device("cpu"))
    observations = batch["observations"]

    def value(actors):
        actions = algorithm.td3.mu(actors, observations.expand(len(actors), *observations.shape))
        flat = observations.repeat(len(actors), 1)
        return critic_of_actions(algorithm.td3.critic, flat, actions.flatten(0, 1), 1).mean()

    assert value(pg) > value(parents_before)


def test_a_lineage_of_more_weights_than_elites_is_rebased_onto_the_elites():
    from neuroplug.evolution.lineage import prune
    from neuroplug.testing.algorithm_contract import _task

    env, network = _task("Pendulum-v1", None)
    algorithm = PGAME(_config(), synthetic_context(seed=0, network=network, env=env))
    population = algorithm.ask()
    algorithm.tell(population, _evaluate(algorithm, population, torch.zeros(network.num_params)))
    archive, lineage = algorithm.archive, algorithm.lineage
    occupied = archive.occupied.tolist()
    # Every elite an Iso+LineDD child of two gradient-made (weights) nodes: 2 vectors each.
    ends = lineage.add_weights(torch.randn(2 * len(occupied), network.num_params))
    children, weights = lineage.iso_line(
        ends[0::2], ends[1::2], lineage.build(ends[0::2].tolist()),
        lineage.build(ends[1::2].tolist()), torch.arange(len(occupied)),
        torch.ones(len(occupied)),
    )  # fmt: skip
    for cell, child, row in zip(occupied, children.tolist(), weights, strict=True):
        archive.genomes[cell], archive.params[cell] = child, row
    prune(algorithm.lineage, archive)
    assert lineage.stored_weights() == len(lineage) == len(occupied)
    genomes = [archive.genomes[cell] for cell in occupied]
    assert torch.equal(lineage.build(genomes), archive.params[torch.tensor(occupied)])


def test_pga_me_resumes_exactly_with_its_archive_critics_and_buffer(compose, tmp_path):
    left, _ = check_resume_is_exact(compose, PENDULUM, tmp_path, generations=4, stop_at=2)
    state = left["algorithm"]["algorithm"]
    assert state["replay"]["size"] == 4 * 8 * 50  # every step played, kept
    # The archive travels as lineage nodes: Iso+LineDD children as recipes, PG children
    # and the greedy actor as weights, never more weight vectors than occupied cells.
    archive, lineage = state["archive"], state["lineage"]
    assert "params" not in archive and "best_params" not in left["algorithm"]
    assert len(lineage["weights"]) <= len(archive["cells"])
    assert set(archive["genomes"]) <= set(lineage["ids"].tolist())


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["env=cartpole", "algo.bounds=[[-1,1]]"], "algo", "needs bounded continuous"),
        (["algo.population_size=2"], "algo.population_size", "greedy actor"),
        (["algo.ga_proportion=1.5"], "algo.ga_proportion", r"\[0, 1\]"),
    ],
)
def test_bad_input_is_refused_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*PENDULUM, *overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
