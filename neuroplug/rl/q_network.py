"""A Q-network over neuroplug's policy network: its outputs are the actions' values.

The parameters are the policy network's, one flat vector in its layout, so the deployed
policy (the argmax of the outputs, as every backend and evaluation computes it) is the
greedy policy of the Q-values, with nothing else to carry: no critic, no log-std.
"""

from __future__ import annotations

import torch
from torch import nn

from neuroplug.nets.network import Network


class QNetwork(nn.Module):
    """``Q(s, .)`` for a batch of observations, from one trainable flat parameter vector."""

    def __init__(self, network: Network, initial_params: torch.Tensor) -> None:
        super().__init__()
        self.network = network
        self.policy = nn.Parameter(initial_params.detach().clone().float())
        """The flat parameters, in the network's layout (what a learner deploys)."""

    def policy_vector(self) -> torch.Tensor:
        """The flat parameter vector: what is deployed."""
        return self.policy.detach()

    def forward(self, observations: torch.Tensor, params: torch.Tensor | None = None):
        """``(n, actions)`` Q-values; ``params`` (a target network's, say) instead of the
        trainable ones when given."""
        return self.network.forward_single(self.policy if params is None else params, observations)
