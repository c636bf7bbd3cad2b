"""EnvPool's step results read straight from its C++ state list, and actions sent straight in.

EnvPool's Python ``recv`` turns every batch into gymnasium's ``(obs, reward, terminated,
truncated, info)``: it unflattens a tree of arrays and builds an info dict per call, and its
``send`` converts and checks the actions on every call. A sampler that steps a pool
millions of times needs neither: :class:`RawSteps` maps the state list's positions once and
hands back the arrays EnvPool filled, untouched. The meaning is EnvPool's own:
``done`` is terminated or truncated, ``trunc`` the truncation alone. Where the true score
and the real game over come from is the env family's rule (``score_info_key``,
``game_over_info_key``: on Atari ``info:reward`` is the unclipped reward and
``info:terminated`` the real game over; with ``episodic_life``, ``done`` also marks each
lost life).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from neuroplug.envs.family import EnvFamily
from neuroplug.envs.flatten import FlatObservationPool, flatten
from neuroplug.envs.masking import MaskedObservationPool, MaskedSteps
from neuroplug.envs.measured_frames import MeasuredFramesPool
from neuroplug.envs.spec import EnvSpec


class StepBatch(NamedTuple):
    """One batch of step results, in the order EnvPool finished them (see ``env_ids``)."""

    env_ids: np.ndarray
    """``(n,)`` int32: which of the pool's envs each row belongs to."""
    observations: np.ndarray
    """``(n, *obs)``: the next observations (dict observations already flattened)."""
    rewards: np.ndarray
    """``(n,)`` float32: the rewards the learner sees (clipped when the pool clips)."""
    done: np.ndarray
    """``(n,)`` bool: the learner's episode ended (terminated or truncated)."""
    truncated: np.ndarray
    """``(n,)`` bool: it ended by the time limit."""
    game_rewards: np.ndarray
    """``(n,)`` float32: the unclipped game reward (Atari's ``info:reward``; else ``rewards``)."""
    game_over: np.ndarray
    """``(n,)`` bool: the whole game ended (Atari: all lives lost, or truncated; else ``done``)."""


class RawSteps:
    """Send actions to and receive results from one EnvPool pool without conversions."""

    def __init__(self, pool: Any, family: EnvFamily) -> None:
        parts = pool.parts if isinstance(pool, FlatObservationPool) else None
        self.parts = parts
        self.categorical = pool.categorical if parts is not None else ()
        self.measured = pool.layout if isinstance(pool, MeasuredFramesPool) else None
        """Frames with info entries below their pixels (``env.measurements``), or None."""
        self.pool = pool.pool if parts is not None or self.measured is not None else pool
        keys = list(self.pool._state_keys)
        self._index = {key: keys.index(key) for key in keys}
        if self.measured is not None:
            self._measurement_keys = [
                self._index[f"info:{key}"] for key, _ in self.measured.vectors
            ]
        if parts is None:
            self._observation_keys = [self._index["obs"]]
        else:  # a dict observation: its entries, in the order the spec flattens them
            self._observation_keys = [self._index[f"obs:{key}"] for key, _ in parts]
            self._observation_entries = [
                (key, at) for (key, _), at in zip(parts, self._observation_keys, strict=True)
            ]
        self._action_keys = list(self.pool._action_keys)
        score, game_over = family.score_info_key, family.game_over_info_key
        self._game_rewards = self._index[f"info:{score}"] if score else None
        self._game_terminated = self._index[f"info:{game_over}"] if game_over else None

    def reset(self) -> None:
        """Reset every env; the next :meth:`recv` returns their first observations."""
        self.pool.async_reset()

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        """Step envs ``env_ids`` (int32) with ``actions`` (the pool's action dtype)."""
        by_key = {"env_id": env_ids, "players.env_id": env_ids, "action": actions}
        self.pool._send([by_key[key] for key in self._action_keys])

    def recv(self) -> StepBatch:
        """The next batch of results (blocks until the pool's batch is ready)."""
        state = self.pool._recv()
        index = self._index
        if self.measured is not None:
            values = np.stack([state[at] for at in self._measurement_keys], 1)
            observations = self.measured.with_rows(state[self._observation_keys[0]], values)
        elif self.parts is None:
            observations = state[self._observation_keys[0]]
        else:
            entries = {key: state[at] for key, at in self._observation_entries}
            observations = flatten(entries, self.parts, self.categorical)
        rewards, done, truncated = (
            state[index["reward"]],
            state[index["done"]],
            state[index["trunc"]],
        )
        game_rewards = rewards if self._game_rewards is None else state[self._game_rewards]
        if self._game_terminated is None:
            game_over = done
        else:
            game_over = state[self._game_terminated].astype(bool) | truncated
        return StepBatch(
            state[index["info:env_id"]],
            observations,
            rewards,
            done,
            truncated,
            game_rewards,
            game_over,
        )

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()


def step_driver(pool: Any, spec: EnvSpec):
    """The learners' step driver of ``pool``, a pool of ``spec``'s env: its pool kind's
    (:meth:`~neuroplug.envs.pool_kind.PoolKind.step_batches`), masked entries removed."""
    if isinstance(pool, MaskedObservationPool):  # before its pool's attributes show through
        return MaskedSteps(step_driver(pool.pool, spec), pool.hidden)
    return spec.pool_kind.step_batches(pool, spec.family)
