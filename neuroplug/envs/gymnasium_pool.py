"""Gymnasium envs behind the pool interface neuroplug drives EnvPool through.

The evaluation engine and the learners' sampler step pools with EnvPool's asynchronous
calls: ``send(actions, env_ids)`` steps some of a pool's envs, ``recv()`` returns their
results, ``async_reset()`` restarts them all. :class:`GymnasiumPool` gives any gymnasium
``Env`` those calls with EnvPool's meaning, so everything above the pool works unchanged:

- env ``i`` is seeded once, by ``seeds[i]`` at its first reset; later episodes continue
  its own RNG (``reset()`` without a seed), so a slot's episodes depend only on its seed
  and the actions it was sent, as in EnvPool;
- a fresh env, and an env whose last step ended its episode, resets on its next ``send``
  (the action is ignored; the result is its first observation, reward 0, not done);
- only the envs named in ``send`` step: evolution steps the alive members' envs only.

Where the envs run is the pool's ``workers``: 0 steps them in this process, one after the
other (cheap envs: CartPole's step costs less than a message to another process); ``w >=
1`` splits them into ``w`` runs of consecutive envs, each run in a worker process
(:mod:`neuroplug.envs.gymnasium_workers`) that steps all its envs of a ``send`` per
message, so a batch costs one round trip per worker, not per env, and the envs step while
this process infers. Results do not depend on the choice: each env sees the same seed and
actions either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from neuroplug.envs.gymnasium_env import SlotMaker, StepArrays
from neuroplug.envs.raw_steps import StepBatch


class GymnasiumPool:
    """Gymnasium envs ``maker`` builds, one per seed, driven like an EnvPool pool (or
    PettingZoo's worlds, an agent a slot: their maker's ``lanes_per_env`` slots a world)."""

    def __init__(self, maker: SlotMaker, seeds: Sequence[int], workers: int = 0) -> None:
        self.maker = maker
        self.num_envs = len(seeds)
        self._pending: list[tuple[Any, np.ndarray]] = []
        if workers <= 0:
            self._local: Any = maker.slot_set([int(seed) for seed in seeds])
            self._runs: list = []
        else:
            from neuroplug.envs.gymnasium_workers import worker_runs

            self._local = None
            self._runs = worker_runs(maker, [int(seed) for seed in seeds], workers)

    # ----------------------------------------------------------- EnvPool's calls

    def async_reset(self) -> None:
        """Reset every env; the next :meth:`recv` returns all first observations."""
        everyone = np.arange(self.num_envs, dtype=np.int32)
        if self._local is not None:
            self._pending.append((self._local.reset_all(), everyone))
        else:
            for run in self._runs:
                run.send_reset()
            self._pending.append((None, everyone))

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        """Step envs ``env_ids`` with ``actions`` (row ``i`` for env ``env_ids[i]``)."""
        env_ids = np.asarray(env_ids, dtype=np.int32)
        actions = np.asarray(actions)
        if self._local is not None:
            self._pending.append((self._local.step(env_ids, actions), env_ids))
            return
        for index, run in enumerate(self._runs):
            mine = (env_ids >= run.first) & (env_ids < run.first + run.count)
            # An empty send still gets its (empty) answer, from the first worker.
            run.send_step(env_ids[mine] - run.first, actions[mine], always=index == 0)
        self._pending.append((None, env_ids))

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
        """gymnasium's ``(obs, reward, terminated, truncated, info)`` for the oldest
        ``send``; ``info["env_id"]`` says which env each row is."""
        arrays = self._take()
        info = {"env_id": arrays.env_ids, **arrays.info}
        return arrays.observations, arrays.rewards, arrays.terminated, arrays.truncated, info

    def render(self, env_ids: Sequence[int]) -> np.ndarray:
        """``(n, H, W, 3)``: the RGB frames of envs ``env_ids`` (a ``render_mode`` of
        ``rgb_array`` must be among the maker's kwargs)."""
        env_ids = np.asarray(env_ids, dtype=np.int64)
        if self._local is not None:
            return self._local.render(env_ids)
        frames = [None] * len(env_ids)
        for run in self._runs:
            rows = np.flatnonzero((env_ids >= run.first) & (env_ids < run.first + run.count))
            if len(rows):
                for row, frame in zip(rows, run.render(env_ids[rows] - run.first), strict=True):
                    frames[row] = frame
        return np.stack(frames)

    def close(self) -> None:
        """Close every env (worker processes stay, for the next pool of the same env)."""
        if self._local is not None:
            self._local.close()
        for run in self._runs:
            run.close()
        self._runs = []

    # ----------------------------------------------------------- the sampler's calls

    def step_batches(self, score_key: str | None, game_over_key: str | None) -> GymnasiumSteps:
        """The raw step driver the learners' sampler uses (see :class:`GymnasiumSteps`)."""
        return GymnasiumSteps(self, score_key, game_over_key)

    # -----------------------------------------------------------------------------

    def _take(self) -> StepArrays:
        if not self._pending:
            raise RuntimeError("recv() without a send() or async_reset() in flight")
        arrays, env_ids = self._pending.pop(0)
        if arrays is not None:
            return arrays
        parts = [run.receive() for run in self._runs if run.expects()]
        merged = StepArrays.concatenate(parts)
        if len(env_ids) and len(merged.env_ids) != len(env_ids):
            raise RuntimeError("a worker returned results for other envs than were sent")
        return merged


class GymnasiumSteps:
    """:class:`~neuroplug.envs.raw_steps.RawSteps`'s calls over a :class:`GymnasiumPool`."""

    def __init__(self, pool: GymnasiumPool, score_key: str | None, game_over_key: str | None):
        self.pool = pool
        self.score_key = score_key
        self.game_over_key = game_over_key

    def reset(self) -> None:
        """Reset every env; the next :meth:`recv` returns their first observations."""
        self.pool.async_reset()

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        """Step envs ``env_ids`` with ``actions``."""
        self.pool.send(actions, env_ids)

    def recv(self) -> StepBatch:
        """The next batch of results."""
        arrays = self.pool._take()
        done = arrays.terminated | arrays.truncated
        rewards = arrays.rewards
        game_rewards = (
            rewards
            if self.score_key is None
            else np.asarray(arrays.info[self.score_key], dtype=np.float32)
        )
        game_over = (
            done
            if self.game_over_key is None
            else np.asarray(arrays.info[self.game_over_key], dtype=bool) | arrays.truncated
        )
        return StepBatch(
            arrays.env_ids,
            arrays.observations,
            rewards,
            done,
            arrays.truncated,
            game_rewards,
            game_over,
        )

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()
