"""algo=cem_rl: CEM's update as the paper writes it, stacked learners that learn as
separate ones would, learning Pendulum, an exact resume with the buffer and the critics,
and bad input refused before training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from neuroplug_learners.hybrids.cem_rl import CEMRL, log_weights
from neuroplug_learners.hybrids.cem_rl_config import CEMRLConfig
from neuroplug_learners.td3 import TD3Update

from neuroplug.api import AlgorithmContext, EvaluationResult
from neuroplug.app import run_job
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.evolution.context import algorithm_context
from neuroplug.nets.mlp import MLP
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.resume_check import check_resume_is_exact

SMALL = [
    "algo=cem_rl",
    "env=pendulum",
    "net.hidden_sizes=[32,32]",
    "algo.critic_hidden=[64,64]",
    "algo.population_size=6",
    "algo.batch_size=64",
]


def _context(hidden=(8,)) -> AlgorithmContext:
    env = make_spec(EnvConfig(task_id="Pendulum-v1"))
    network = MLP(env.obs_shape[0], list(hidden), env.num_actions, "tanh")
    return algorithm_context(network, seed=0, env=env)


def test_cem_rl_honours_the_algorithm_contract_while_it_learns():
    config = CEMRLConfig(
        name="cem_rl", learning_starts=5, batch_size=4, buffer_size=100, critic_hidden=[8]
    )
    check_algorithm_contract(CEMRL, config, generations=3)


def test_the_mean_and_variance_are_fitted_to_the_best_half_with_log_weights():
    config = CEMRLConfig(name="cem_rl", population_size=6, buffer_size=100, damp=1e-3)
    algorithm = CEMRL(config, _context())
    old_mean = algorithm.mean.clone()
    algorithm.ask()  # the buffer is empty: no learning, the draws as they are
    members = algorithm._members.double()
    fitness = np.array([3.0, -1.0, 5.0, 0.0, 4.0, -2.0])
    result = EvaluationResult(
        returns=fitness[:, None], lengths=np.ones((6, 1), dtype=np.int64), env_steps=6,
        frames=6, forward_passes=6,
    )  # fmt: skip
    algorithm.tell(None, result)
    best = members[[2, 4, 0]]
    weights = torch.tensor([np.log(4 / 1), np.log(4 / 2), np.log(4 / 3)], dtype=torch.float64)
    weights /= weights.sum()
    torch.testing.assert_close(algorithm.mean, weights @ best)
    torch.testing.assert_close(algorithm.variance, weights @ (best - old_mean) ** 2 + 1e-3)
    assert algorithm.damp == pytest.approx(0.95 * 1e-3 + 0.05 * 1e-5)
    assert torch.equal(algorithm.best_params, members[2].float())
    torch.testing.assert_close(log_weights(3), weights)


def test_stacked_learners_take_the_steps_separate_ones_would():
    context = _context((16,))
    config = CEMRLConfig(name="cem_rl", critic_hidden=[32])
    td3 = TD3Update.for_algorithm(config, context)
    generator = torch.Generator().manual_seed(1)
    start = torch.stack([context.fresh_params(seed) for seed in (1, 2)])
    observations = torch.randn(2, 16, 3, generator=generator)
    together = torch.nn.Parameter(start.clone())
    optimizer = torch.optim.Adam([together], 1e-3)
    td3.actor_step(together, optimizer, observations)
    for k in range(2):
        alone = torch.nn.Parameter(start[k : k + 1].clone())
        optimizer = torch.optim.Adam([alone], 1e-3)
        td3.actor_step(alone, optimizer, observations[k : k + 1])
        torch.testing.assert_close(together[k], alone[0], rtol=1e-5, atol=1e-6)
    assert not torch.equal(together.detach(), start)


def test_cem_rl_learns_pendulum(compose, tmp_path):
    # 2026-11-28 (Zen 5 EPYC), seed 0: generations of 6 x 200 steps, learning from the
    # second; the deployed mean scored -1,149 (random), -1,648 (gen 3), -746, -352 (gen 6),
    # -242 (gen 9), -123 (gen 10).
    overrides = [*SMALL, "algo.learning_starts=1200", "run.max_generations=10"]
    overrides += ["run.eval_interval=0", "run.eval_episodes=5", "logger=none"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["eval_return_mean"] > -400, summary


def test_cem_rl_resumes_exactly_with_its_buffer_and_critics(compose, tmp_path):
    overrides = [*SMALL, "algo.learning_starts=400", "env.max_episode_steps=50"]
    overrides += ["algo.actor_steps_per_env_step=0.2", "algo.critic_steps_per_env_step=0.2"]
    left, _ = check_resume_is_exact(compose, overrides, tmp_path, generations=4, stop_at=2)
    assert left["algorithm"]["replay"]["size"] == 4 * 6 * 50  # every step played, kept


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        (["algo=cem_rl", "env=cartpole"], "algo", "needs bounded continuous"),
        (["algo=cem_rl", "env=pendulum", "algo.learners=11"], "algo.learners", "up to 10"),
        (
            ["algo=cem_rl", "env=pendulum", "algo.buffer_size=10000000000000"],
            "algo.buffer_size",
            "GiB",
        ),
    ],
)
def test_bad_input_is_refused_before_training_naming_the_field(
    compose, tmp_path, overrides, field, says
):
    with pytest.raises(ConfigError, match=says) as raised:
        run_job(compose([*overrides, "logger=none", f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
