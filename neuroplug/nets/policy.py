"""From observations to actions around a network: normalization in, action head out."""

from __future__ import annotations

import numpy as np
import torch

from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.network import Network
from neuroplug.nets.normalizer import ObservationNormalizer


class Policy:
    """The parts of acting that are the same for every member and every backend.

    Discrete actions are the argmax of the outputs (deterministic policies, as in the
    ES and GA papers); continuous actions are ``tanh`` outputs scaled to the action box,
    plus optional Gaussian exploration noise, clipped to the box.
    """

    def __init__(self, network: Network, env: EnvSpec, normalize_observations: bool) -> None:
        self.network = network
        self.env = env
        self.normalizer = (
            ObservationNormalizer(env.obs_shape[0])
            if normalize_observations and not env.is_image and not network.reads_token_ids
            else None
        )

    def prepare(self, observations: np.ndarray, device: torch.device) -> torch.Tensor:
        """Observations as the network's input tensor on ``device``."""
        if self.normalizer is not None:
            observations = self.normalizer.normalize(observations)
        elif observations.dtype != np.uint8:
            observations = observations.astype(np.float32, copy=False)
        return torch.from_numpy(np.ascontiguousarray(observations)).to(device)

    def actions(self, outputs: torch.Tensor) -> np.ndarray:
        """Env actions for network outputs ``(n, out)``, without exploration noise."""
        return self.act(outputs)[0]

    def act(
        self, outputs: torch.Tensor, noise: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Env actions for outputs ``(n, out)`` and which rows were NaN/inf.

        One device-to-host copy carries both (a GPU step should sync once, not twice).
        ``noise``: ``(n, num_actions)`` already scaled by the caller: standard normals
        added to continuous actions before clipping; Gumbel draws times a temperature added
        to discrete actions' outputs before the argmax (a draw from their softmax).
        """
        if noise is not None and self.env.discrete:
            outputs = outputs + torch.as_tensor(noise, device=outputs.device)
            noise = None
        if outputs.device.type == "cpu":
            # Already on the host: numpy's small-array ops cost a fraction of torch's.
            values = outputs.float().numpy()
            invalid = ~np.isfinite(values).all(axis=1)
            if self.env.discrete:
                return values.argmax(axis=1).astype(np.int32), invalid
            unit = torch.tanh(outputs).float().numpy()  # torch's tanh, as on a GPU
        else:
            finite = torch.isfinite(outputs).all(dim=1)
            if self.env.discrete:
                host = torch.stack((outputs.argmax(dim=1), finite.long())).cpu().numpy()
                return host[0].astype(np.int32), host[1] == 0
            host = torch.cat((torch.tanh(outputs).float(), finite.float().unsqueeze(1)), 1)
            host = host.cpu().numpy()
            unit, invalid = host[:, :-1], host[:, -1] == 0
        low, high = self.env.action_low, self.env.action_high
        actions = low + (unit + 1.0) * 0.5 * (high - low)
        if noise is not None:
            actions = actions + noise
        return np.clip(actions, low, high).astype(np.float32), invalid
