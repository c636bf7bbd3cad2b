"""Rewards scaled by the spread of the discounted return (PPO's reward normalisation).

What CleanRL's ``ppo_continuous_action.py`` does with gymnasium's ``NormalizeReward`` and a
clip (Engstrom et al. 2020, "Implementation Matters in Deep Policy Gradients"; Huang et al.
2022, detail 29): each env keeps its discounted return ``G <- gamma G + r`` (zero again
after its episode ends), a running variance of those returns is updated with every step's
``G`` of every env, and the learner trains on ``clip(r / sqrt(var + 1e-8), -10, 10)``.
The mean is not subtracted: the reward's sign, and so a terminal state's meaning, stay.

Why it matters: on MuJoCo, returns of hundreds make the value loss hundreds of times the
policy loss, and the gradient-norm clip, applied to their sum, then shrinks the policy's
step to almost nothing (``algo=ppo env=hopper`` without it plateaued near 345, CleanRL's
script climbed to ~975 at 196k steps: ``docs/parity.md``).

Steps EnvPool spends on an auto-reset (``valid`` False) are left out: their reward is
zero and no return moves. The state (each env's return, the variance's count, mean and
M2) is float64 and checkpointed, so a resumed run scales as the uninterrupted one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

CLIP = 10.0
"""CleanRL's ``TransformReward(lambda r: np.clip(r, -10, 10))``."""
EPSILON = 1e-8


class RewardScaler:
    """Running discounted returns of ``num_envs`` envs and the variance they scale by."""

    def __init__(self, num_envs: int, gamma: float) -> None:
        self.gamma = float(gamma)
        self.returns = np.zeros(num_envs, dtype=np.float64)
        # gymnasium's RunningMeanStd starts from mean 0, var 1 and a count of 1e-4.
        self.count, self.mean, self.var = 1e-4, 0.0, 1.0

    def _add(self, batch: np.ndarray) -> None:
        """Chan et al.'s parallel update of the mean and variance with ``batch``."""
        count = len(batch)
        if count == 0:
            return
        mean, var = float(batch.mean()), float(batch.var())
        total = self.count + count
        delta = mean - self.mean
        self.mean += delta * count / total
        m2 = self.var * self.count + var * count + delta**2 * self.count * count / total
        self.var, self.count = m2 / total, total

    def scale(
        self, rewards: torch.Tensor, valid: torch.Tensor, ended: torch.Tensor
    ) -> torch.Tensor:
        """The ``(T, N)`` rewards scaled step by step, the state moved past them. Columns
        past its ``num_envs`` (a member's games in another member's envs,
        :mod:`neuroplug.rl.guest_steps`) are scaled alike but not counted: their envs'
        returns are not this scaler's to follow."""
        raw = rewards.detach().cpu().numpy().astype(np.float64)
        own = len(self.returns)
        valid, ended = valid[:, :own].cpu().numpy(), ended[:, :own].cpu().numpy()
        scaled = np.zeros_like(raw)
        for step in range(len(raw)):
            rows = valid[step]
            self.returns[rows] = self.returns[rows] * self.gamma + raw[step, :own][rows]
            self._add(self.returns[rows])
            scaled[step] = raw[step] / np.sqrt(self.var + EPSILON)
            self.returns[ended[step] & rows] = 0.0
        scaled = np.clip(scaled, -CLIP, CLIP)
        return torch.from_numpy(scaled).to(dtype=rewards.dtype, device=rewards.device)

    def state_dict(self) -> dict[str, Any]:
        """Every env's return and the variance's statistics."""
        return {
            "returns": self.returns.copy(),
            "count": self.count,
            "mean": self.mean,
            "var": self.var,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`."""
        self.returns = np.array(state["returns"], dtype=np.float64)
        self.count, self.mean, self.var = (float(state[key]) for key in ("count", "mean", "var"))
