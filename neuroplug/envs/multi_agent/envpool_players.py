"""EnvPool's multi-player tasks (``max_num_players > 1``: ``IntersectionMultiAgent-v1``'s
two cars) as a pool of worlds whose players are its slots, as PettingZoo's worlds are
(:mod:`neuroplug.envs.multi_agent.lanes`): world ``w`` of k players holds slots ``w k ..
w k + k - 1``, with EnvPool's step contract per world.

EnvPool returns one row per player (``info["players"]["env_id"]`` says whose env) and one
``terminated`` / ``truncated`` per env; here every row is a slot, each player its env's
end. A world steps all its players at once; a ``send`` that names some of a world's
players only, or a step that returns another number of players than the task's, is
refused in one line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neuroplug.envs.gymnasium_env import StepArrays
from neuroplug.envs.gymnasium_pool import GymnasiumSteps


class EnvPoolPlayersPool:
    """``pool`` (EnvPool's, of ``worlds`` envs, gymnasium API, synchronous batch) read as
    ``worlds x players`` slots."""

    def __init__(self, pool: Any, players: int) -> None:
        self.pool = pool
        self.players = players
        self.num_envs = pool.config["num_envs"] * players

    def async_reset(self) -> None:
        """Reset every world; the next :meth:`recv` returns every player's first rows."""
        self.pool.async_reset()

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        """Step the worlds of slots ``env_ids`` with ``actions`` (row ``i`` for slot
        ``env_ids[i]``)."""
        env_ids = np.asarray(env_ids)
        order = np.argsort(env_ids, kind="stable")
        slots = env_ids[order]
        worlds = slots // self.players
        if (
            len(slots) % self.players
            or not (
                slots.reshape(-1, self.players)
                == (worlds[:: self.players, None] * self.players) + np.arange(self.players)
            ).all()
        ):
            raise RuntimeError(
                f"slots {env_ids.tolist()} name some players of a world only: its "
                f"{self.players} players step together"
            )
        self.pool.send(np.asarray(actions)[order], worlds[:: self.players].astype(np.int32))

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """gymnasium's ``(obs, reward, terminated, truncated, info)`` per slot."""
        arrays = self._take()
        return (
            arrays.observations, arrays.rewards, arrays.terminated, arrays.truncated,
            {"env_id": arrays.env_ids},
        )  # fmt: skip

    def _take(self) -> StepArrays:
        observations, rewards, terminated, truncated, info = self.pool.recv()
        worlds = np.asarray(info["env_id"])
        owners = np.asarray(info["players"]["env_id"])
        if len(owners) != len(worlds) * self.players:
            raise RuntimeError(
                f"EnvPool returned {len(owners)} players for {len(worlds)} envs of "
                f"{self.players} players: tasks whose players leave are not supported yet"
            )
        # Within each env, players keep their order: the i-th row of env w is slot w k + i.
        rank = np.zeros(len(owners), dtype=np.int64)
        for world in np.unique(owners):
            rows = np.flatnonzero(owners == world)
            rank[rows] = np.arange(len(rows))
        where = {int(world): row for row, world in enumerate(worlds)}
        of_owner = np.array([where[int(world)] for world in owners])
        return StepArrays(
            (owners * self.players + rank).astype(np.int32),
            np.asarray(observations),
            np.asarray(rewards, np.float32),
            np.asarray(terminated, bool)[of_owner],
            np.asarray(truncated, bool)[of_owner],
            {},
        )

    def render(self, env_ids) -> np.ndarray:
        """Each slot's world as EnvPool draws it."""
        worlds = np.asarray(env_ids) // self.players
        frames = self.pool.render(env_ids=np.unique(worlds))
        index = {int(world): k for k, world in enumerate(np.unique(worlds))}
        return np.stack([frames[index[int(world)]] for world in worlds])

    def close(self) -> None:
        self.pool.close()

    def step_batches(self, score_key: str | None, game_over_key: str | None) -> GymnasiumSteps:
        """The learners' step driver (the gymnasium pool's, over these calls)."""
        return GymnasiumSteps(self, None, None)
