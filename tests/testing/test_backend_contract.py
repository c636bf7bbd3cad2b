"""Every installed backend honours the backend contract (neuroplug.testing), and the
check catches a backend that breaks it."""

from __future__ import annotations

import pytest
import torch

from neuroplug import registry
from neuroplug.nets.mlp import MLP
from neuroplug.testing import check_backend_contract
from neuroplug.testing.algorithm_contract import ContractViolation
from neuroplug.testing.scheduler_contract import ReferenceBackend


def test_the_torch_backend_honours_the_contract():
    check_backend_contract(registry.load("backends", "torch"))


def test_the_reference_backend_honours_the_contract():
    check_backend_contract(ReferenceBackend, networks=[MLP(5, [16], 3, "tanh")])


class _Centered(ReferenceBackend):
    """Breaks the contract on purpose: rows depend on the batch (centered per call)."""

    def forward(self, members, observations):
        outputs = super().forward(members, observations)
        return outputs - outputs.mean(0, keepdim=True) if len(outputs) > 1 else outputs


class _Lazy(ReferenceBackend):
    """Breaks the contract on purpose: every row is member 0."""

    def forward(self, members, observations):
        return super().forward(torch.zeros_like(members), observations)


@pytest.mark.parametrize(
    ("backend", "message"),
    [(_Centered, "differ from the reference"), (_Lazy, "differ from the reference")],
)
def test_the_contract_catches_wrong_members_and_batch_dependent_rows(backend, message):
    with pytest.raises(ContractViolation, match=message):
        check_backend_contract(backend, networks=[MLP(5, [16], 3, "tanh")])
