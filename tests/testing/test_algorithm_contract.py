"""Every installed algorithm plugin honours the contract (neuroplug.testing)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from neuroplug import registry
from neuroplug.api import AlgorithmConfig
from neuroplug.evolution import EvolutionAlgorithm
from neuroplug.population import Population
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.algorithm_contract import ContractViolation


@pytest.mark.parametrize("name", sorted(registry.discover("algorithms")))
def test_installed_algorithm_honours_the_contract(name):
    check_algorithm_contract(registry.load("algorithms", name))


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
