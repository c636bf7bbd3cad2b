"""NS-ES, NSR-ES and NSRA-ES: rounds, updates, selection, weight adaptation, checkpoints,
and more distinct behaviors than ES on a deceptive task."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
import torch
from neuroplug_algorithms.novelty_es import NSES, NSRAES, NSRES, NSESConfig, NSRAESConfig

from neuroplug.api import EvaluationResult
from neuroplug.app import run_job
from neuroplug.config.typed import to_dataclass
from neuroplug.errors import ConfigError
from neuroplug.evolution.shaping import centered_ranks
from neuroplug.experiment.typed import typed_experiment
from neuroplug.population.noise import noise_vectors
from neuroplug.runtime.seeds import EVALUATION_GENERATION_OFFSET
from neuroplug.testing import check_resume_is_exact, synthetic_context, synthetic_result
from neuroplug.testing.resume_check import same
from neuroplug.training.trainer import Trainer

NUM_PARAMS = 6
TARGET = torch.linspace(-1.0, 1.0, NUM_PARAMS)


def _initializer(seed: int) -> torch.Tensor:
    return torch.randn(NUM_PARAMS, generator=torch.Generator().manual_seed(seed))


def _build(algorithm_class=NSES, seed: int = 0, **overrides):
    config = algorithm_class.config_class(name="ns", population_size=8, **overrides)
    context = synthetic_context(
        seed=seed, initializer=_initializer, initial_params=torch.zeros(NUM_PARAMS)
    )
    return algorithm_class(config, context)


def _synthetic(algorithm, population) -> EvaluationResult:
    """Fitness -||theta - target||^2; behavior the first two parameters."""
    members = population.materialize()
    fitness = -((members - TARGET) ** 2).sum(dim=1).numpy()
    return synthetic_result(
        fitness, algorithm.episodes_per_member(), behaviors=members[:, :2].numpy()
    )


def _round(algorithm):
    """One ask/evaluate/tell round on the synthetic task; returns the population."""
    population = algorithm.ask()
    algorithm.tell(population, _synthetic(algorithm, population))
    return population


def _generation(algorithm) -> list[torch.Tensor]:
    """Rounds until the generation completes; returns every population's members."""
    start, members = algorithm.generation, []
    while algorithm.generation == start:
        members.append(_round(algorithm).materialize())
    return members


# --------------------------------------------------------------------------- rounds


def test_generation_zero_evaluates_the_centers_then_a_population_then_the_updated_center():
    algorithm = _build(meta_population_size=3, center_episodes=2)
    assert algorithm.behavior() == "auto"
    centers = algorithm.ask()
    members = centers.materialize()
    # Three fresh draws from the init distribution (not the run's initial network, zeros).
    assert len(centers) == 3 and algorithm.episodes_per_member() == 2
    assert len({tuple(row.tolist()) for row in members}) == 3 and members.abs().sum() > 0
    algorithm.tell(centers, _synthetic(algorithm, centers))
    assert algorithm.generation == 0 and len(algorithm.archive) == 3

    perturbed = algorithm.ask()
    assert len(perturbed) == 8 and algorithm.episodes_per_member() == 1
    assert torch.equal(perturbed.bases[0], members[algorithm.active])
    assert torch.equal(perturbed.seed[0::2], perturbed.seed[1::2])  # mirrored, as in ES
    algorithm.tell(perturbed, _synthetic(algorithm, perturbed))
    assert algorithm.generation == 0

    updated = algorithm.ask()
    assert len(updated) == 1 and algorithm.episodes_per_member() == 2
    assert torch.equal(updated.materialize()[0], algorithm.centers[algorithm.active].params)
    assert not torch.equal(updated.materialize()[0], members[algorithm.active])
    algorithm.tell(updated, _synthetic(algorithm, updated))
    assert algorithm.generation == 1 and len(algorithm.archive) == 4

    # Later generations have two rounds: the population and the updated center.
    assert [len(members) for members in _generation(algorithm)] == [8, 1]
    assert algorithm.generation == 2 and len(algorithm.archive) == 5


@pytest.mark.parametrize(
    ("algorithm_class", "reward_weight"), [(NSES, 0.0), (NSRES, 0.5), (NSRAES, 1.0)]
)
def test_the_update_is_es_with_weights_mixing_reward_and_novelty_ranks(
    algorithm_class, reward_weight
):
    algorithm = _build(algorithm_class, l2_coeff=0.0, learning_rate=0.01, sigma=0.1)
    _round(algorithm)
    population = algorithm.ask()
    active = algorithm.active
    before = [center.params.clone() for center in algorithm.centers]
    rng = np.random.default_rng(3)
    returns, behaviors = rng.normal(size=8), rng.normal(size=(8, 2))
    novelty = algorithm.archive.novelty(behaviors, k=10)
    weights = reward_weight * centered_ranks(returns) + (1 - reward_weight) * centered_ranks(
        novelty
    )
    eps = noise_vectors(population.seed[0::2], NUM_PARAMS)
    gradient = torch.from_numpy(weights[0::2] - weights[1::2]).float() @ eps / 8
    stats = algorithm.tell(population, synthetic_result(returns, behaviors=behaviors))
    assert stats["reward_weight"] == reward_weight
    # Adam's first step moves every coordinate by lr * sign(gradient).
    step = algorithm.centers[active].params - before[active]
    assert torch.allclose(step, 0.01 * torch.sign(gradient), atol=1e-6)
    for index, center in enumerate(algorithm.centers):
        if index != active:
            assert torch.equal(center.params, before[index])


def test_a_center_whose_behavior_is_no_longer_novel_is_never_picked():
    algorithm = _build(meta_population_size=2, k=3)
    _round(algorithm)
    # Center 0's behavior fills its own neighbourhood: its novelty is 0.
    algorithm.archive.add(np.repeat(algorithm.center_behaviors[:1], 3, axis=0))
    for _ in range(5):
        population = algorithm.ask()
        assert algorithm.active == 1
        assert torch.equal(population.bases[0], algorithm.centers[1].params)
        algorithm.tell(population, _synthetic(algorithm, population))
        _round(algorithm)


def test_the_deployed_policy_is_the_center_with_the_best_last_return():
    algorithm = _build(meta_population_size=3)
    centers = algorithm.ask()
    algorithm.tell(centers, synthetic_result([1.0, 5.0, 3.0], behaviors=np.eye(3)[:, :2]))
    assert torch.equal(algorithm.policy_params(), algorithm.centers[1].params)
    _round(algorithm)
    updated = algorithm.ask()
    algorithm.tell(updated, synthetic_result([10.0], behaviors=np.zeros((1, 2))))
    assert torch.equal(algorithm.policy_params(), algorithm.centers[algorithm.active].params)


def test_nsra_raises_w_on_improvement_and_lowers_it_after_a_stall():
    algorithm = _build(NSRAES, initial_reward_weight=0.5, weight_delta=0.1, stall_generations=2)
    algorithm.tell(algorithm.ask(), synthetic_result([0.0, 0.0, 0.0], behaviors=np.eye(3)[:, :2]))
    weights = []
    for center_return in (1.0, 1.0, 0.5, 0.5, 0.5, 2.0):
        _round(algorithm)
        algorithm.tell(
            algorithm.ask(), synthetic_result([center_return], behaviors=np.zeros((1, 2)))
        )
        weights.append(round(algorithm.reward_weight, 10))
    # better, stall 1, stall 2 (-> down, count restarts), stall 1, stall 2 (-> down), better
    assert weights == [0.6, 0.6, 0.5, 0.5, 0.4, 0.5]


def test_nsra_keeps_w_within_zero_and_one():
    algorithm = _build(NSRAES, weight_delta=0.6, stall_generations=1)
    algorithm.tell(algorithm.ask(), synthetic_result([0.0, 0.0, 0.0], behaviors=np.eye(3)[:, :2]))
    seen = []
    for center_return in (1.0, 0.0, 0.0, 0.0):
        _round(algorithm)
        algorithm.tell(
            algorithm.ask(), synthetic_result([center_return], behaviors=np.zeros((1, 2)))
        )
        seen.append(round(algorithm.reward_weight, 10))
    assert seen == [1.0, 0.4, 0.0, 0.0]


def test_a_result_without_behaviors_is_a_clear_error():
    algorithm = _build()
    centers = algorithm.ask()
    result = dataclasses.replace(_synthetic(algorithm, centers), behaviors=None)
    with pytest.raises(RuntimeError, match=r"no behaviors for request.behavior='auto'"):
        algorithm.tell(centers, result)


@pytest.mark.parametrize(
    ("config_class", "kwargs", "field"),
    [
        (NSESConfig, {"k": 0}, "algo.k"),
        (NSESConfig, {"meta_population_size": 0}, "algo.meta_population_size"),
        (NSESConfig, {"population_size": 7}, "algo.population_size"),
        (NSESConfig, {"behavior": "final_velocity"}, "algo.behavior"),
        (NSESConfig, {"center_episodes": 0}, "algo.center_episodes"),
        (NSESConfig, {"fitness_shaping": "none"}, "algo.fitness_shaping"),
        (NSESConfig, {"sigma": 0.0}, "algo.sigma"),
        (NSRAESConfig, {"initial_reward_weight": 1.5}, "algo.initial_reward_weight"),
        (NSRAESConfig, {"weight_delta": 0.0}, "algo.weight_delta"),
        (NSRAESConfig, {"stall_generations": 0}, "algo.stall_generations"),
    ],
)
def test_invalid_settings_name_the_field(config_class, kwargs, field):
    with pytest.raises(ConfigError, match=field):
        config_class(**kwargs)


# --------------------------------------------------------------------------- checkpoints


@pytest.mark.parametrize("algorithm_class", [NSES, NSRES, NSRAES])
def test_a_restored_state_continues_exactly(algorithm_class):
    extra = {"stall_generations": 1} if algorithm_class is NSRAES else {}
    original = _build(algorithm_class, **extra)
    for _ in range(3):
        _generation(original)
    buffer = io.BytesIO()
    torch.save(original.state_dict(), buffer)
    buffer.seek(0)
    restored = _build(algorithm_class, seed=99, **extra)
    restored.load_state_dict(torch.load(buffer, weights_only=False))
    for _ in range(3):
        expected, actual = _generation(original), _generation(restored)
        assert len(expected) == len(actual)
        assert all(torch.equal(a, b) for a, b in zip(expected, actual, strict=True))
    assert same(original.state_dict(), restored.state_dict())
    assert torch.equal(original.policy_params(), restored.policy_params())


def test_a_checkpoint_of_another_meta_population_size_is_refused():
    state = _build(meta_population_size=2).state_dict()
    with pytest.raises(ValueError, match="2 centers, algo.meta_population_size is 3"):
        _build(meta_population_size=3).load_state_dict(state)


# --------------------------------------------------------------------------- runs


@pytest.mark.parametrize("name", ["ns_es", "nsr_es", "nsra_es"])
def test_the_shipped_configs_hold_the_papers_values(compose, name):
    config = compose([f"algo={name}"])
    algorithm_class = {"ns_es": NSES, "nsr_es": NSRES, "nsra_es": NSRAES}[name]
    settings = to_dataclass(algorithm_class.config_class, config.algo, "algo")
    assert (settings.k, settings.meta_population_size, settings.behavior) == (10, 3, "auto")
    assert (settings.sigma, settings.learning_rate, settings.l2_coeff) == (0.02, 0.01, 0.005)
    assert settings.mirrored and settings.obs_norm
    if name == "nsra_es":
        assert (settings.initial_reward_weight, settings.weight_delta) == (1.0, 0.05)
        assert settings.stall_generations == 10


def test_a_resumed_run_ends_in_the_uninterrupted_state(compose, quiet_overrides, tmp_path):
    overrides = [
        *quiet_overrides,
        "algo=nsra_es",
        "algo.stall_generations=1",
        "run.eval_interval=2",
        "net.hidden_sizes=[16]",
    ]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path)
    assert len(left["algorithm"]["algorithm"]["archive"]["behaviors"]) == 3 + 4


def test_a_bc_that_does_not_fit_the_env_stops_the_run_naming_the_field(
    compose, quiet_overrides, tmp_path
):
    config = compose(
        [*quiet_overrides, "algo=ns_es", "algo.behavior=final_ram", f"run.output_dir={tmp_path}"]
    )
    with pytest.raises(ConfigError, match=r"^algo\.behavior: final_ram needs info\['ram'\]"):
        run_job(config)


# --------------------------------------------------------------------------- deception


def _distinct_final_positions(compose, tmp_path, algo: str, seed: int, frames: int) -> int:
    """0.05-wide bins of final car positions reached by training episodes in ``frames``."""
    config = compose(
        [
            f"algo={algo}",
            "env=envpool",
            "env.task_id=MountainCar-v0",
            "algo.population_size=16",
            "net.hidden_sizes=[16]",
            "logger=none",
            f"run.seed={seed}",
            f"run.max_frames={frames}",
            "run.max_generations=null",
            "run.eval_interval=0",
            "run.stop_when_solved=false",
            f"run.output_dir={tmp_path / algo}",
        ]
    )
    trainer = Trainer(typed_experiment(config), tmp_path / algo)
    evaluate, positions = trainer.parts.scheduler.evaluate, []

    def measuring(population, policy, backend, request):
        if request.generation >= EVALUATION_GENERATION_OFFSET:  # the final policy evaluation
            return evaluate(population, policy, backend, request)
        # ES asks for no behavior; measuring one changes nothing an algorithm sees.
        measured = dataclasses.replace(request, behavior="final_obs")
        result = evaluate(population, policy, backend, measured)
        positions.append(result.behaviors[..., 0].ravel())
        return dataclasses.replace(result, behaviors=result.behaviors if request.behavior else None)

    trainer.parts.scheduler.evaluate = measuring
    trainer.train()
    return len(np.unique(np.floor((np.concatenate(positions) + 1.2) / 0.05)))


def test_ns_es_reaches_more_distinct_final_positions_than_es_on_mountain_car(compose, tmp_path):
    """MountainCar-v0 is deceptive: -1 per step until the flag, so every policy that misses
    it scores -200 and ES's tie-averaged ranks give no update; ES moves only once a member
    stumbles on the flag, and then converges there. NS-ES is pushed to new final positions
    all along. At 60k frames (population 16, MLP 2-16-3, shipped settings otherwise) over
    seeds 0-9: NS-ES 28-35 bins (mean 31.1), ES 14-28 (mean 22.4); seed 0: 31 vs 23."""
    frames = 60_000
    es = _distinct_final_positions(compose, tmp_path, "es", seed=0, frames=frames)
    ns_es = _distinct_final_positions(compose, tmp_path, "ns_es", seed=0, frames=frames)
    assert ns_es >= es + 5, (ns_es, es)
