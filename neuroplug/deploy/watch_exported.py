"""An exported policy played by the evaluation engine: its actions taken as they come.

The engine asks a :class:`~neuroplug.nets.policy.Policy` to prepare observations and a
:class:`~neuroplug.api.Backend` for outputs, then the policy for actions. An exported model
normalises inside and returns actions, so here the policy passes observations through and
the "outputs" are the model's actions (a recurrent model's state goes through the
engine's state slots, zeroed where an episode starts, as for any recurrent network).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neuroplug.api import Backend, BackendConfig
from neuroplug.deploy.export import ExportedModel
from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.policy import Policy
from neuroplug.population.members import Population


@dataclass(frozen=True)
class _StateWidth:
    """What the engine reads of a policy's network: the width of its recurrent state."""

    state_size: int


class ExportedPolicy(Policy):
    """Observations as the env gives them; the model's actions as the env's."""

    def __init__(self, env: EnvSpec, model: ExportedModel) -> None:
        super().__init__(_StateWidth(model.state_size), env, normalize_observations=False)

    def prepare(self, observations: np.ndarray, device: torch.device) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(observations))

    def act(
        self, outputs: torch.Tensor, noise: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        values = outputs.numpy()
        if self.env.discrete:
            return values.astype(np.int32), np.zeros(len(values), dtype=bool)
        invalid = ~np.isfinite(values).all(axis=1)
        return values.astype(np.float32), invalid


class ExportedBackend(Backend):
    """Every member is the exported model: it runs on the observations it is given."""

    runs_recurrent_cores = True

    def __init__(self, model: ExportedModel) -> None:
        super().__init__(BackendConfig(), None)  # type: ignore[arg-type]
        self.model = model

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def load(self, population: Population) -> None:
        """Nothing to load: the model holds its parameters."""

    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        return torch.as_tensor(self.model(observations.numpy()))

    def forward_with_state(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        actions, new_state = self.model(observations.numpy(), state.float().numpy())
        return torch.as_tensor(actions), torch.as_tensor(new_state)
