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

# Bit-equality across batches and companies: the outcome rests on the kernels the
# libraries pick (scripts/test_kernels.sh runs it again under a narrower instruction set).
pytestmark = pytest.mark.kernels


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


class _Unnormalized(ReferenceBackend):
    """Breaks the contract on purpose: claims virtual batch norm and runs the raw weights."""

    runs_virtual_batch_norm = True


def test_the_contract_catches_a_backend_that_claims_virtual_batch_norm_and_skips_it():
    from neuroplug.testing.backend_contract import normalized_networks

    with pytest.raises(ContractViolation, match="differ from the reference"):
        check_backend_contract(_Unnormalized, networks=normalized_networks()[:1])
