"""Every installed algorithm plugin honours the contract (neuroplug.testing)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
import torch

from neuroplug import registry
from neuroplug.api import AlgorithmConfig
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.population.members import Population
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.algorithm_contract import ContractViolation


@pytest.mark.parametrize("name", sorted(registry.discover("algorithms")))
def test_installed_algorithm_honours_the_contract(name):
    algorithm = registry.load("algorithms", name)
    config = replace(algorithm.config_class(), name=name)
    if getattr(config, "bounds", 0) is None:  # a QD archive over a task needs its range
        config = replace(config, bounds=[[-1.0, 1.0]])
    # Learners beside a population (cem_rl, erl, pga_me): the same steps, smaller.
    small = {"pg_steps": 5, "critic_steps": 10, "critic_hidden": [8], "buffer_size": 1000}
    config = replace(config, **{key: value for key, value in small.items() if hasattr(config, key)})
    check_algorithm_contract(algorithm, config)


@dataclass
class _ForgetfulConfig(AlgorithmConfig):
    population_size: int = 4


class _Forgetful(EvolutionAlgorithm):
    """Breaks the contract on purpose: its RNG is not part of its checkpoint."""

    config_class = _ForgetfulConfig

    def __init__(self, config, context):
        super().__init__(config, context)
        self.center = context.initial_params.clone()
        self.noise = torch.Generator().manual_seed(context.seed)

    def _ask(self):
        members = self.center + torch.randn(4, self.num_params, generator=self.noise)
        return Population.dense(members)

    def _tell(self, population, fitness, result):
        self.center = population.materialize()[int(fitness.argmax())]
        return {}

    def policy_params(self):
        return self.center.clone()

    def _state(self):
        return {"center": self.center.clone()}

    def _load_state(self, state):
        self.center = state["center"].clone()


def test_the_contract_catches_a_checkpoint_that_forgets_state():
    with pytest.raises(ContractViolation, match="restored checkpoint diverged"):
        check_algorithm_contract(_Forgetful)
