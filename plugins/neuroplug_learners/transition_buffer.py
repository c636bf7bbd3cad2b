"""The replay buffer evolution and RL share (``cem_rl``, ``erl``): the steps a population
played (:class:`neuroplug.api.Transitions`), the most recent ``capacity`` kept.

The learners' own buffer (:mod:`neuroplug.rl.replay_buffer`) is fed by rollouts of fixed
envs and stores each frame once; here the transitions come whole from evaluations, in
episodes of many members, so each row keeps its observation and the next. Actions are
stored as the critics read them: in the unit box ``[-1, 1]``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import Transitions
from neuroplug.envs.spec import EnvSpec
from neuroplug.runtime.devices import refuse_unless_it_fits

ROW_FIELDS = ("observations", "unit_actions", "rewards", "next_observations", "terminated")


def unit_actions(env: EnvSpec, actions: np.ndarray) -> np.ndarray:
    """Env actions in the box as the policy's ``tanh`` outputs: ``[-1, 1]``."""
    low, high = env.action_low, env.action_high
    return (2.0 * (actions - low) / (high - low) - 1.0).astype(np.float32)


class TransitionBuffer:
    """A ring of the last ``capacity`` transitions, sampled uniformly."""

    def __init__(self, capacity: int, env: EnvSpec, gamma: float = 0.99) -> None:
        self.capacity = int(capacity)
        self.env = env
        self.gamma = gamma
        """Each sampled transition's ``discounts``: ``gamma (1 - terminated)``."""
        observation = (self.capacity, *env.obs_shape)
        self.observations = np.zeros(observation, dtype=np.float32)
        self.next_observations = np.zeros(observation, dtype=np.float32)
        self.unit_actions = np.zeros((self.capacity, env.num_actions), dtype=np.float32)
        self.rewards = np.zeros(self.capacity, dtype=np.float32)
        self.terminated = np.zeros(self.capacity, dtype=bool)
        self.added = 0
        """Transitions ever added (the ring position is this modulo the capacity)."""

    @staticmethod
    def bytes_needed(capacity: int, env: EnvSpec) -> int:
        """The memory a buffer of ``capacity`` transitions takes, before building it."""
        per_row = 4 * (2 * math.prod(env.obs_shape) + env.num_actions + 1) + 1
        return int(capacity) * per_row

    def __len__(self) -> int:
        return min(self.added, self.capacity)

    def add(self, transitions: Transitions) -> None:
        """Store ``transitions`` in their order, overwriting the oldest."""
        rows = (self.added + np.arange(len(transitions))) % self.capacity
        keep = slice(-self.capacity, None)  # more than the capacity: the newest only
        rows = rows[keep]
        self.observations[rows] = transitions.observations[keep]
        self.next_observations[rows] = transitions.next_observations[keep]
        self.unit_actions[rows] = unit_actions(self.env, transitions.actions[keep])
        self.rewards[rows] = transitions.rewards[keep]
        self.terminated[rows] = transitions.terminated[keep]
        self.added += len(transitions)

    def sample(self, shape: tuple[int, ...], generator: torch.Generator) -> dict[str, torch.Tensor]:
        """``shape`` transitions drawn uniformly with replacement (``(K, B)`` for K
        learners' minibatches at once), with their ``discounts`` (as the learners' replay
        buffer gives them: ``gamma``, 0 where the episode terminated)."""
        count = math.prod(shape)
        rows = torch.randint(len(self), (count,), generator=generator).numpy()
        batch = {
            name: torch.from_numpy(getattr(self, name)[rows]).reshape(
                *shape, *getattr(self, name).shape[1:]
            )
            for name in ROW_FIELDS
        }
        batch["discounts"] = self.gamma * (1.0 - batch["terminated"].float())
        return batch

    def state_dict(self) -> dict[str, Any]:
        """The stored rows (oldest first) and the count, for checkpoints."""
        order = (self.added - len(self) + np.arange(len(self))) % self.capacity
        state: dict[str, Any] = {name: getattr(self, name)[order] for name in ROW_FIELDS}
        state["added"] = self.added
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (into a buffer of the same capacity)."""
        held = len(state["rewards"])
        rows = (state["added"] - held + np.arange(held)) % self.capacity
        for name in ROW_FIELDS:
            getattr(self, name)[rows] = state[name]
        self.added = int(state["added"])


def transition_buffer(capacity: int, env: EnvSpec, gamma: float) -> TransitionBuffer:
    """The run's buffer, refused in one line where it would not fit in memory."""
    needed = TransitionBuffer.bytes_needed(capacity, env)
    refuse_unless_it_fits(
        "algo.buffer_size",
        needed,
        f"{capacity:,} transitions of {env.task_id}",
        lambda room: f"algo.buffer_size <= {int(room / (needed / capacity)):,}",
    )
    return TransitionBuffer(capacity, env, gamma)
