"""The contract every scheduler plugin honours: the same results as ``threaded``.

Use it from a plugin's own tests::

    from neuroplug.testing import check_scheduler_contract

    def test_my_scheduler_honours_the_contract():
        check_scheduler_contract(MyScheduler, MySchedulerConfig(name="mine", max_envs=5))

It evaluates one population (a center and mirrored noise, several episodes per member,
Gaussian action noise on Pendulum, discrete actions on CartPole) with the scheduler under
test and with the lockstep engine in one group (what ``scheduler=threaded`` plays), on the
same backend, and requires identical results: every episode's return and length, the
frame and step counters, the observation statistics and the behaviors. A second
evaluation of the same request must repeat the first exactly (pools kept between
evaluations must not leak state), and progress reports must only go forward and end at
the totals.

``config`` must give the scheduler as many env slots (``max_envs``) as the reference uses
(results depend on the slots, never on the schedule); ``backend`` defaults to
:class:`ReferenceBackend`, which materialises the members it is asked for.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from neuroplug.api import (
    Backend,
    BackendConfig,
    EvaluationRequest,
    EvaluationResult,
    Scheduler,
    SchedulerConfig,
)
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.evaluation.lockstep import LockstepScheduler, LockstepSchedulerConfig
from neuroplug.nets.mlp import MLP
from neuroplug.nets.network import Network
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population
from neuroplug.testing.algorithm_contract import ContractViolation

TASKS = (("Pendulum-v1", 30), ("CartPole-v1", 60))
"""(task, episode cap): continuous actions with noise, and discrete actions."""


class ReferenceBackend(Backend):
    """The plainest backend: the members asked for, materialised, through the network's
    batched forward on the CPU."""

    config_class = BackendConfig

    def __init__(self, config: BackendConfig, network: Network) -> None:
        super().__init__(config, network)
        self._population: Population | None = None

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def load(self, population: Population) -> None:
        self._population = population

    @torch.no_grad()
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        params = self._population.materialize(members.cpu())
        return self.network.forward_population(params, observations.float())


def _recorder(reports: list):
    """A progress callback appending each report to ``reports``."""
    return lambda *report: reports.append(report)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def _same_result(result: EvaluationResult, reference: EvaluationResult) -> str | None:
    """What differs between two evaluations (None when nothing does)."""
    for field in ("returns", "lengths"):
        if not np.array_equal(getattr(result, field), getattr(reference, field)):
            return field
    for field in ("env_steps", "frames"):
        if getattr(result, field) != getattr(reference, field):
            return f"{field} ({getattr(result, field)} against {getattr(reference, field)})"
    stats, expected = result.obs_stats, reference.obs_stats
    if (stats is None) != (expected is None) or (
        stats is not None
        and not all(
            np.array_equal(getattr(stats, name), getattr(expected, name))
            for name in ("total", "total_squares", "count")
        )
    ):
        return "obs_stats"
    if (result.behaviors is None) != (reference.behaviors is None) or (
        result.behaviors is not None and not np.array_equal(result.behaviors, reference.behaviors)
    ):
        return "behaviors"
    return None


def check_scheduler_contract(
    scheduler_class: type[Scheduler],
    config: SchedulerConfig,
    backend: Backend | None = None,
    members: int = 6,
    episodes_per_member: int = 2,
) -> None:
    """Raise :class:`ContractViolation` naming the first broken part of the contract."""
    name = scheduler_class.__name__
    max_envs = getattr(config, "max_envs", None)
    for task_id, steps in TASKS:
        env = make_spec(EnvConfig(task_id=task_id, max_episode_steps=steps))
        network = MLP(env.obs_shape[0], [8], env.num_actions, "tanh")
        policy = Policy(network, env, normalize_observations=True)
        player = backend or ReferenceBackend(BackendConfig(name="reference"), network)
        center = network.initial_params(torch.Generator().manual_seed(0))
        population = Population(
            center.unsqueeze(0),
            torch.zeros(members, dtype=torch.int64),
            torch.tensor([0.5, -0.5]).repeat(members // 2 + 1)[:members],
            torch.arange(members, dtype=torch.int64) // 2 + 1,
        )
        request = EvaluationRequest(
            generation=3,
            episodes_per_member=episodes_per_member,
            seed=7,
            action_noise=0.1 if not env.discrete else 0.0,
            collect_obs_stats=True,
            behavior="final_obs",
        )
        reference_engine = LockstepScheduler(
            LockstepSchedulerConfig(name="threaded", max_envs=max_envs), env
        )
        scheduler = scheduler_class(config, env)
        try:
            reference = reference_engine.evaluate(population, policy, player, request)
            reports: list[tuple[int, int, int]] = []
            tracked = dataclasses.replace(request, progress=_recorder(reports))
            result = scheduler.evaluate(population, policy, player, tracked)
            again = scheduler.evaluate(population, policy, player, request)
        finally:
            scheduler.close()
            reference_engine.close()
        where = f"{name} on {task_id}"
        differs = _same_result(result, reference)
        _require(differs is None, f"{where}: {differs} differ from the threaded schedule's")
        differs = _same_result(again, result)
        _require(differs is None, f"{where}: a second evaluation changed {differs}")
        if reports:
            done = [report[0] for report in reports]
            _require(done == sorted(done), f"{where}: progress went backwards")
            total = members * episodes_per_member
            _require(
                reports[-1][:2] == (total, total),
                f"{where}: the last progress report must say all {total} episodes are done",
            )
