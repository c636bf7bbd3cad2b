"""Persistent EnvPool envs, stepped in K groups so simulation and inference overlap.

Sample Factory's double-buffered sampling (``worker_num_splits=2``): the envs are split into
K groups, each its own EnvPool driven with ``send``/``recv``. While group g's observations
go through the policy, the other groups' envs are stepping in EnvPool's C++ threads (which
run without the GIL); then g's actions are sent and the next group is received. Envs are
never rebuilt within a segment; :meth:`Sampler.start` re-seeds them at a segment's start.

Bookkeeping per env and step: EnvPool resets an env on the step after its episode ended,
and that step's action is ignored, so the transition is marked invalid (no learning from
it). The learner's episode ends on ``terminated`` (with ``episodic_life`` on Atari: on each
lost life) or ``truncated``; a *game* ends on the real game over or ``truncated``, and its
true score — the unclipped ``info["reward"]`` summed over all lives on Atari — is what is
reported, whatever the learner trains on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from neuroplug.envs.make import make_pool
from neuroplug.envs.spec import EnvSpec


@dataclass
class Rollout:
    """``T`` steps of ``N`` envs, time-major, on the learner's device."""

    observations: torch.Tensor
    """``(T, N, *obs)`` (uint8 frames stay uint8 until the network)."""
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    rewards: torch.Tensor
    """The learner's rewards (clipped when asked)."""
    terminated: torch.Tensor
    """``(T, N)`` bool: the learner's episode ended without a future (no bootstrap)."""
    ended: torch.Tensor
    """``(T, N)`` bool: the learner's episode ended (terminated or truncated)."""
    valid: torch.Tensor
    """``(T, N)`` bool: False for the auto-reset steps, whose actions the env ignored."""
    next_values: torch.Tensor
    """``(N,)``: the values of the observations after the last step (bootstrap)."""
    last_observations: torch.Tensor
    """``(N, *obs)``: those observations (a learner with newer weights re-values them)."""
    policy_version: int = 0
    """The policy's version (SGD steps) when this rollout was sampled."""


@dataclass
class Episodes:
    """Completed games: true scores and lengths (agent steps)."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)


class _Group:
    """One EnvPool holding envs ``indices`` of the sampler."""

    def __init__(self, pool, indices: np.ndarray) -> None:
        self.pool = pool
        self.indices = indices
        # A group is a run of consecutive envs: its rows of every buffer are one slice,
        # indexed without building an index tensor per step.
        self.rows = slice(int(indices[0]), int(indices[-1]) + 1)
        self.observations: np.ndarray | None = None
        """The observations the policy acts on next (in env order)."""
        self.last_step: int | None = None
        """The rollout row whose actions the pool is stepping (None: a reset)."""


Act = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor, np.ndarray]]
"""observations -> (actions, log_probs, values, env actions), for one group's envs."""


class Sampler:
    """``num_envs`` EnvPool envs in ``groups`` groups, kept for the whole segment."""

    def __init__(
        self,
        env: EnvSpec,
        num_envs: int,
        groups: int,
        num_threads: int,
        device: torch.device,
        reward_clip: bool = False,
        episodic_life: bool = False,
    ) -> None:
        self.env = env
        self.num_envs = num_envs
        self.num_groups = max(1, min(groups, num_envs))
        self.num_threads = num_threads or os.cpu_count() or 1
        self.device = device
        self.overrides = (
            {"reward_clip": reward_clip, "episodic_life": episodic_life}
            if env.family == "atari"
            else {}
        )
        self.episodic_life = episodic_life and env.family == "atari"
        self.groups: list[_Group] = []
        self.score = np.zeros(num_envs)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self.resetting = np.zeros(num_envs, dtype=bool)
        self.episodes = Episodes()
        self.env_steps = 0
        self.forward_passes = 0
        self.timings = {"env": 0.0, "inference": 0.0, "env_setup": 0.0}

    def start(self, seeds: np.ndarray) -> None:
        """(Re)build the envs with one seed each and reset them; episodes in progress end."""
        self.close()
        started = time.perf_counter()
        threads = max(1, self.num_threads // self.num_groups)
        for indices in np.array_split(np.arange(self.num_envs), self.num_groups):
            pool = make_pool(self.env, seeds[indices], threads, **self.overrides)
            pool.async_reset()
            self.groups.append(_Group(pool, indices))
        self.score[:] = 0.0
        self.length[:] = 0
        self.resetting[:] = False
        self.timings["env_setup"] += time.perf_counter() - started

    def take_episodes(self) -> Episodes:
        """The games completed since the last call."""
        episodes, self.episodes = self.episodes, Episodes()
        return episodes

    def rollout(self, act: Act, length: int) -> Rollout:
        """Step every env ``length`` times with ``act``; the next observations stay pending
        (the next rollout acts on them, with whatever policy it has by then)."""
        buffers = _Buffers(length, self.num_envs, self.env, self.device)
        for step in range(length):
            for group in self.groups:
                if group.observations is None:
                    self._receive(group, buffers)
                self._act_and_send(group, step, act, buffers)
        for group in self.groups:
            self._receive(group, buffers)
        started = time.perf_counter()
        last = torch.zeros_like(buffers.observations[0])
        next_values = torch.empty(self.num_envs, device=self.device)
        for group in self.groups:
            observations = self._tensor(group.observations)
            _, _, values, _ = act(observations)
            next_values[group.rows] = values
            last[group.rows] = observations.to(last.dtype)
        self.timings["inference"] += time.perf_counter() - started
        return buffers.rollout(next_values, last)

    def _act_and_send(self, group: _Group, step: int, act: Act, buffers: _Buffers) -> None:
        started = time.perf_counter()
        observations = self._tensor(group.observations)
        actions, log_probs, values, env_actions = act(observations)
        rows = group.rows
        buffers.record_action(step, rows, observations, actions, log_probs, values)
        buffers.valid[step, rows] = torch.from_numpy(~self.resetting[rows]).to(self.device)
        self.forward_passes += len(group.indices)
        sent = time.perf_counter()
        self.timings["inference"] += sent - started
        group.pool.send(env_actions, np.arange(len(group.indices), dtype=np.int32))
        group.last_step = step
        group.observations = None
        self.timings["env"] += time.perf_counter() - sent

    def _receive(self, group: _Group, buffers: _Buffers) -> None:
        """Take the group's step results; book them on the row whose actions caused them."""
        started = time.perf_counter()
        observations, reward, terminated, truncated, info = group.pool.recv()
        self.timings["env"] += time.perf_counter() - started
        order = np.argsort(info["env_id"])
        envs = group.indices
        group.observations = observations[order]
        if group.last_step is None:  # the results of a reset
            return
        terminated, truncated = terminated[order], truncated[order]
        was_resetting = self.resetting[envs]
        counted = ~was_resetting
        true_reward = (info["reward"] if self.env.family == "atari" else reward)[order]
        self.score[envs] += np.where(counted, true_reward, 0.0)
        self.length[envs] += counted
        self.env_steps += int(counted.sum())
        ended = (terminated | truncated) & counted
        if self.episodic_life:
            game_over = (info["terminated"][order].astype(bool) | truncated) & counted
        else:
            game_over = ended
        for row in np.flatnonzero(game_over):
            self.episodes.returns.append(float(self.score[envs[row]]))
            self.episodes.lengths.append(int(self.length[envs[row]]))
        self.score[envs[game_over]] = 0.0
        self.length[envs[game_over]] = 0
        # EnvPool resets an env on its next step after the learner's episode ended.
        self.resetting[envs] = ended
        buffers.record_outcome(
            group.last_step, group.rows, reward[order], terminated & counted, ended, self.device
        )

    def _tensor(self, observations: np.ndarray) -> torch.Tensor:
        if observations.dtype != np.uint8:
            observations = observations.astype(np.float32, copy=False)
        return torch.from_numpy(np.ascontiguousarray(observations)).to(self.device)

    def close(self) -> None:
        """Close the pools."""
        for group in self.groups:
            group.pool.close()
        self.groups = []


class _Buffers:
    """The rollout being filled."""

    def __init__(self, length: int, num_envs: int, env: EnvSpec, device: torch.device) -> None:
        shape = (length, num_envs)
        obs_dtype = torch.uint8 if env.obs_dtype == np.uint8 else torch.float32
        self.observations = torch.zeros((*shape, *env.obs_shape), dtype=obs_dtype, device=device)
        action_shape = shape if env.discrete else (*shape, env.num_actions)
        action_dtype = torch.int64 if env.discrete else torch.float32
        self.actions = torch.zeros(action_shape, dtype=action_dtype, device=device)
        self.log_probs = torch.zeros(shape, device=device)
        self.values = torch.zeros(shape, device=device)
        self.rewards = torch.zeros(shape, device=device)
        self.terminated = torch.zeros(shape, dtype=torch.bool, device=device)
        self.ended = torch.zeros(shape, dtype=torch.bool, device=device)
        self.valid = torch.zeros(shape, dtype=torch.bool, device=device)

    def record_action(self, step, rows, observations, actions, log_probs, values) -> None:
        self.observations[step, rows] = observations.to(self.observations.dtype)
        self.actions[step, rows] = actions
        self.log_probs[step, rows] = log_probs
        self.values[step, rows] = values

    def record_outcome(self, step, rows, reward, terminated, ended, device) -> None:
        self.rewards[step, rows] = torch.from_numpy(reward.astype(np.float32)).to(device)
        self.terminated[step, rows] = torch.from_numpy(terminated).to(device)
        self.ended[step, rows] = torch.from_numpy(ended).to(device)

    def rollout(self, next_values: torch.Tensor, last_observations: torch.Tensor) -> Rollout:
        return Rollout(
            self.observations,
            self.actions,
            self.log_probs,
            self.values,
            self.rewards,
            self.terminated,
            self.ended,
            self.valid,
            next_values,
            last_observations,
        )
