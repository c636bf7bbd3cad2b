"""The network contract check, on the networks that carry a recurrent core."""

from __future__ import annotations

import pytest

from neuroplug.nets.mlp import MLP
from neuroplug.nets.nature_cnn import NatureCNN
from neuroplug.testing import check_network_contract


@pytest.mark.parametrize(
    "network",
    [
        MLP(5, [16], 3, "tanh", core="gru", core_size=8),
        MLP(5, [16], 3, "tanh", core="lstm", core_size=8),
        NatureCNN((2, 36, 36), 4, core="gru", core_size=16),
    ],
    ids=["mlp-gru", "mlp-lstm", "nature-cnn-gru"],
)
def test_networks_with_a_recurrent_core_hold_the_contract(network):
    check_network_contract(network)
