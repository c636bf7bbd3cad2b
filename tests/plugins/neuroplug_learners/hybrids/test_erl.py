"""algo=erl: the GA keeps its elites and breeds the rest, the learner explores in a round
of its own and joins the population every sync_period generations, the two learn
Pendulum together, an exact resume, and bad input refused before training."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch
from neuroplug_learners.hybrids.erl import ERL
from neuroplug_learners.hybrids.erl_config import ERLConfig

from neuroplug.api import EvaluationResult, Transitions
from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.evolution.context import algorithm_context
from neuroplug.nets.mlp import MLP
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact

SMALL = [
    "algo=erl",
    "env=pendulum",
    "net.hidden_sizes=[32,32]",
    "algo.critic_hidden=[64,64]",
    "algo.batch_size=64",
]


def _algorithm(**settings) -> ERL:
    env = make_spec(EnvConfig(task_id="Pendulum-v1"))
    network = MLP(env.obs_shape[0], [8], env.num_actions, "tanh")
    context = algorithm_context(network, seed=0, env=env)
    return ERL(ERLConfig(name="erl", buffer_size=500, **settings), context)


def _result(fitness, steps: int = 4) -> EvaluationResult:
    fitness = np.asarray(fitness, dtype=np.float64)
    members = len(fitness)
    rows = members * steps
    transitions = Transitions(
        np.zeros((rows, 3), np.float32), np.zeros((rows, 1), np.float32),
        np.full(rows, -1.0, np.float32), np.zeros((rows, 3), np.float32),
        np.zeros(rows, bool), np.repeat(np.arange(members), steps),
    )  # fmt: skip
    return EvaluationResult(
        returns=fitness[:, None], lengths=np.full((members, 1), steps), env_steps=rows,
        frames=rows, forward_passes=rows, transitions=transitions,
    )  # fmt: skip


def test_erl_honours_the_algorithm_contract_while_it_learns():
    config = ERLConfig(
        name="erl", population_size=4, learning_starts=5, batch_size=4, buffer_size=100,
        critic_hidden=[8], sync_period=2,
    )  # fmt: skip
    check_algorithm_contract(ERL, config, generations=3)


def test_a_generation_is_the_population_without_noise_then_the_learner_exploring():
    erl = _algorithm(population_size=5, exploration_noise=0.3, learning_starts=10**6)
    assert erl.action_noise() == 0.0 and len(erl.ask()) == 5
    before = erl.population.clone()
    erl.tell(None, _result([1.0, 5.0, 3.0, 2.0, 4.0]))
    assert erl.generation == 0  # another round: the learner's
    assert erl.action_noise() == 0.3 and len(erl.ask()) == 1
    # The elite (member 1, fitness 5) leads the next population unchanged; the rest are
    # bred: copies of tournament winners, crossed and mutated.
    assert torch.equal(erl.population[0], before[1])
    assert not any(torch.equal(erl.population[i], before[j]) for i in range(1, 5) for j in range(5))
    assert torch.equal(erl.policy_params(), before[1])  # the champion
    erl.tell(None, _result([-3.0]))
    assert erl.generation == 1 and len(erl.replay) == 5 * 4 + 4


def test_the_learner_is_deployed_when_its_episode_beats_every_member():
    erl = _algorithm(population_size=4, learning_starts=10**6)
    members = erl.population.clone()
    erl.tell(None, _result([1.0, 5.0, 3.0, 2.0]))
    erl.tell(None, _result([4.0]))  # below the best member's 5: the member stays deployed
    assert torch.equal(erl.policy_params(), members[1])
    learner = erl.learner.params.detach()[0].clone()
    erl.tell(None, _result([1.0, 2.0, 3.0, 2.0]))
    erl.tell(None, _result([9.0]))  # above them all
    assert torch.equal(erl.policy_params(), learner)
    assert torch.equal(erl.best_params, learner)


def test_the_learner_replaces_an_offspring_every_sync_period():
    erl = _algorithm(population_size=4, sync_period=2, learning_starts=10**6)
    for generation in range(2):
        erl.tell(None, _result([1.0, 2.0, 3.0, 4.0]))
        learner = erl.learner.params.detach()[0].clone()
        erl.tell(None, _result([0.0]))
        synced = torch.equal(erl.population[-1], learner)
        assert synced == (generation == 1)


def test_the_first_population_acts_differently_where_fresh_draws_stand_still():
    # Fresh networks end in a 0.01-scaled layer: alike, near-zero actions, the only data the
    # critics would see at first. init_sigma spreads them (the default) or not (0).
    observations = torch.randn(4, 64, 3, generator=torch.Generator().manual_seed(0))

    def action_spread(erl: ERL) -> float:
        actions = torch.tanh(erl.context.network.forward_members(erl.population, observations))
        return float(actions.std(dim=0).mean())

    assert action_spread(_algorithm(population_size=4, init_sigma=0.0)) < 0.02
    assert action_spread(_algorithm(population_size=4)) > 0.1


def test_mutation_touches_a_tenth_of_each_tensor_and_keeps_weights_bounded():
    erl = _algorithm(population_size=4, mutation_fraction=0.1, weight_limit=2.0)
    parent = erl.population[0]
    child = erl._mutate(parent)
    changed = (child != parent).float().mean()
    # A tenth of each tensor, rounded up (a bias of one entry is always touched).
    slots = erl.context.network.layout.slots.values()
    touched = sum(math.ceil(0.1 * slot.size) for slot in slots) / len(parent)
    assert 0.02 < changed <= touched
    assert child.abs().max() <= 2.0


def test_erl_learns_pendulum(compose, tmp_path):
    # 2026-11-28 (Xeon, family 6 model 207), seed 0, population 5 (init_sigma 0.1), the
    # learner synced every 2nd generation, 1,200 frames a generation: the learner's exploring
    # episodes went from -770 and -1,470 to -128, -346, -242, -131, -231, -284, -5
    # (generations 6-12), and the population's best from -989 to -118..-242 once it had
    # been synced in.
    overrides = [*SMALL, "algo.population_size=5", "algo.sync_period=2"]
    overrides += ["algo.learning_starts=1000", "run.max_generations=12", "run.eval_interval=0"]
    overrides += ["logger=console", f"run.output_dir={tmp_path}"]
    run_job(compose(overrides))
    with (tmp_path / "metrics.csv").open() as stream:
        rows = list(csv.DictReader(stream))[-4:]
    learner = [float(row["algo/learner_return"]) for row in rows]
    population = [float(row["algo/best_fitness"]) for row in rows]
    assert np.mean(learner) > -500 and max(population) > -300, (learner, population)


def test_erl_resumes_exactly_with_its_population_learner_and_buffer(compose, tmp_path):
    overrides = [*SMALL, "algo.population_size=4", "algo.learning_starts=200"]
    overrides += [
        "env.max_episode_steps=40",
        "algo.sync_period=2",
        "algo.critic_steps_per_env_step=0.3",
    ]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path, generations=4, stop_at=2)
    assert left["algorithm"]["replay"]["size"] == 4 * (4 + 1) * 40  # every step played, kept


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["algo=erl", "env=cartpole"], "algo", "needs bounded continuous"),
        (
            ["algo=erl", "env=pendulum", "algo.population_size=2"],
            "algo.population_size",
            "an elite",
        ),
        (
            ["algo=erl", "env=pendulum", "algo.tournament_size=11"],
            "algo.tournament_size",
            r"\[1, 10\]",
        ),
    ],
)
def test_bad_input_is_refused_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
