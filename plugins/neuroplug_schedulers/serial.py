"""``scheduler=serial``: step one synchronous EnvPool, then run inference, in turn.

The population's episodes (members x episodes per member) fill up to ``max_envs`` slots
of one EnvPool; each slot plays exactly one episode, seeded by its episode index (see
:mod:`neuroplug.envs.make`). Every step, only the members whose episodes are alive go
through the backend; finished slots are ignored until the wave ends. When there are more
episodes than slots, they run in waves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from neuroplug.api import (
    Backend,
    EvaluationRequest,
    EvaluationResult,
    ObservationStats,
    Scheduler,
    SchedulerConfig,
)
from neuroplug.envs.make import episode_seeds, make_pool
from neuroplug.errors import require
from neuroplug.nets.policy import Policy
from neuroplug.population import Population


@dataclass
class SerialSchedulerConfig(SchedulerConfig):
    """Settings of the serial scheduler."""

    max_envs: int = 256
    """Most episodes played at once (EnvPool slots per wave)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.max_envs >= 1, "scheduler.max_envs", f"got {self.max_envs}", "an integer >= 1")


class SerialScheduler(Scheduler):
    """Alternate env steps and batched inference over waves of episodes."""

    config_class = SerialSchedulerConfig

    def evaluate(
        self,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
    ) -> EvaluationResult:
        size, episodes = len(population), request.episodes_per_member
        # Episode e of member m is work item m * episodes + e.
        work_member = np.repeat(np.arange(size), episodes)
        work_episode = np.tile(np.arange(episodes), size)
        returns = np.zeros(size * episodes, dtype=np.float64)
        lengths = np.zeros(size * episodes, dtype=np.int64)
        totals = _ObservationTotals(request.collect_obs_stats)
        rng = np.random.default_rng([request.seed, request.generation, 0xAC7])
        timings = {"env": 0.0, "inference": 0.0}
        forward_passes = 0
        backend.load(population)
        for wave_start in range(0, len(work_member), self.config.max_envs):
            wave = np.arange(wave_start, min(wave_start + self.config.max_envs, len(work_member)))
            forward_passes += self._play_wave(
                wave,
                work_member,
                work_episode,
                policy,
                backend,
                request,
                rng,
                returns,
                lengths,
                totals,
                timings,
            )
        env_steps = int(lengths.sum())
        return EvaluationResult(
            returns=returns.reshape(size, episodes),
            lengths=lengths.reshape(size, episodes),
            env_steps=env_steps,
            frames=env_steps * self.env.frame_skip,
            forward_passes=forward_passes,
            obs_stats=totals.stats(),
            timings=timings,
        )

    def _play_wave(
        self,
        wave,
        work_member,
        work_episode,
        policy,
        backend,
        request,
        rng,
        returns,
        lengths,
        totals,
        timings,
    ) -> int:
        started = time.perf_counter()
        pool = make_pool(
            self.env,
            episode_seeds(request.seed, request.generation, work_episode[wave]),
            self.config.num_threads,
        )
        observations, info = pool.reset()
        timings["env"] += time.perf_counter() - started
        alive = np.ones(len(wave), dtype=bool)
        members = torch.from_numpy(work_member[wave])
        actions = np.zeros(
            (len(wave), *(() if self.env.discrete else (self.env.num_actions,))),
            dtype=np.int32 if self.env.discrete else np.float32,
        )
        forward_passes = 0
        use_game_score = self.env.family == "atari"
        while alive.any():
            slots = np.flatnonzero(alive)
            observations = observations[np.argsort(info["env_id"])]
            totals.add(observations[slots])
            started = time.perf_counter()
            inputs = policy.prepare(observations[slots], backend.device)
            outputs = backend.forward(members[slots], inputs)
            actions[slots] = policy.actions(outputs, rng, request.action_noise)
            forward_passes += len(slots)
            timings["inference"] += time.perf_counter() - started
            started = time.perf_counter()
            observations, reward, terminated, truncated, info = pool.step(actions)
            timings["env"] += time.perf_counter() - started
            order = np.argsort(info["env_id"])
            # Atari: info["reward"] is the unclipped game reward whatever the wrappers do.
            reward = (info["reward"] if use_game_score else reward)[order]
            done = (terminated | truncated)[order]
            returns[wave[slots]] += reward[slots]
            lengths[wave[slots]] += 1
            alive[slots[done[slots]]] = False
        pool.close()
        return forward_passes


class _ObservationTotals:
    """Sums of the observations seen, when the normaliser wants them."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.total = self.total_squares = None
        self.count = 0

    def add(self, observations: np.ndarray) -> None:
        if not self.enabled or len(observations) == 0:
            return
        values = observations.reshape(len(observations), -1).astype(np.float64)
        if self.total is None:
            self.total = np.zeros(values.shape[1])
            self.total_squares = np.zeros(values.shape[1])
        self.total += values.sum(axis=0)
        self.total_squares += np.square(values).sum(axis=0)
        self.count += len(values)

    def stats(self) -> ObservationStats | None:
        if not self.enabled or self.total is None:
            return None
        return ObservationStats(self.total, self.total_squares, self.count)
