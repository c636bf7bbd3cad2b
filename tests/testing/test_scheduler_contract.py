"""Every installed lockstep scheduler honours the scheduler contract (neuroplug.testing),
and the check catches one that plays different episodes."""

from __future__ import annotations

import pytest

from neuroplug import registry
from neuroplug.api import EvaluationRequest
from neuroplug.evaluation.lockstep import LockstepScheduler
from neuroplug.testing import check_scheduler_contract
from neuroplug.testing.algorithm_contract import ContractViolation


@pytest.mark.parametrize("name", ["serial", "threaded", "pipelined"])
@pytest.mark.kernels
def test_the_shipped_schedulers_honour_the_contract(name, compose):
    from neuroplug.config.typed import to_dataclass

    settings = compose([f"scheduler={name}", "scheduler.max_envs=4"]).scheduler
    scheduler_class = registry.load("schedulers", settings.name)
    check_scheduler_contract(
        scheduler_class, to_dataclass(scheduler_class.config_class, settings, "scheduler")
    )


class _OtherSeeds(LockstepScheduler):
    """Breaks the contract on purpose: plays the next generation's episodes."""

    def evaluate(self, population, policy, backend, request: EvaluationRequest):
        from dataclasses import replace

        return super().evaluate(
            population, policy, backend, replace(request, generation=request.generation + 1)
        )


def test_the_contract_catches_a_scheduler_playing_other_episodes():
    from neuroplug.evaluation.lockstep import LockstepSchedulerConfig

    with pytest.raises(ContractViolation, match="differ from the threaded schedule"):
        check_scheduler_contract(_OtherSeeds, LockstepSchedulerConfig(name="other", max_envs=4))
