"""Persistent EnvPool envs, stepped in K groups so simulation and inference overlap.

Sample Factory's double-buffered sampling (``worker_num_splits=2``): the envs are split into
K groups, each its own EnvPool driven with ``send``/``recv``. While group g's observations
go through the policy, the other groups' envs are stepping in EnvPool's C++ threads (which
run without the GIL); then g's actions are sent and the next group is received.

The envs are built once and live for the whole run: a rollout ends with every env's next
observation pending, and the next rollout (of this segment or the next) acts on it. No
episode is cut by a rollout or a segment; a game is reported, with its true score and
length, in whichever rollout it ends. Only :meth:`Sampler.start` (a run's start, or a
resumed run's) begins new episodes.

Per step the loop does a fixed, small amount of work whatever the number of envs: EnvPool's
results are read raw (:mod:`neuroplug.envs.raw_steps`), observations go to the policy's
device in one copy, actions come back in one, and rewards and flags are written into host
arrays. Everything derived from them — which steps are EnvPool's auto-resets, the
learner's episode ends, game scores and lengths — is computed once per rollout, vectorised.

Why this is its own EnvPool driver, not the episode engine's
(:mod:`neuroplug.evaluation.lockstep`): both step groups of envs with ``send``/``recv``, but
little else of the per-step loop is common. The engine plays a fixed list of episodes:
it sends only the lanes whose episode is alive, hands a finished lane the next episode
(with its own seed and no-op start), reads EnvPool's info dict for behavior
characterisations and its observer's frames, and lives for one evaluation. The sampler
steps every env at every step for the whole run, never retires one, and fills fixed
``(T, N)`` rollouts from EnvPool's raw arrays. One driver would put the engine's partial
sends, work assignment and info dicts into the per-step path this module keeps at a fixed
cost, or the sampler's whole-batch buffers into the engine. What the two share lives once
below both: pool construction (:func:`neuroplug.envs.make.make_pool`), the thread split
(:func:`neuroplug.runtime.devices.available_env_threads`), seeds (:mod:`neuroplug.runtime.seeds`) and each family's
true score and game-over rule (:class:`neuroplug.envs.family.EnvFamily`).

Bookkeeping: EnvPool resets an env on the step after its episode ended, and that step's
action is ignored, so the transition is marked invalid (no learning from it). The learner's
episode ends on ``done`` (with ``episodic_life`` on Atari: on each lost life); a *game* ends
on the real game over or a truncation, and its true score — the unclipped reward summed
over all lives on Atari — is what is reported, whatever the learner trains on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from neuroplug.api import SamplerRequest
from neuroplug.envs.make import make_pool
from neuroplug.envs.raw_steps import RawSteps, StepBatch, step_driver
from neuroplug.envs.spec import EnvSpec
from neuroplug.rl.acting import Acted, Acting
from neuroplug.runtime.devices import available_env_threads
from neuroplug.runtime.seeds import acting_seed


@dataclass
class Rollout:
    """``T`` steps of ``N`` envs, time-major, on the learner's device."""

    observations: torch.Tensor
    """``(T, N, *obs)`` (uint8 frames stay uint8 until the network)."""
    actions: torch.Tensor
    """``(T, N)`` int64, or ``(T, N, A)`` pre-squash float actions: what the policy chose."""
    log_probs: torch.Tensor
    """``(T, N)``: their log-probabilities under the acting policy."""
    values: torch.Tensor
    """``(T, N)``: the critic's values of the observations, when acting."""
    rewards: torch.Tensor
    """``(T, N)``: the learner's rewards (clipped when asked)."""
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
    states: torch.Tensor | None = None
    """A recurrent policy's ``(T, N, H)`` core states before each step (what it acted
    from); None for a feed-forward policy. The update re-runs the core from them."""
    starts: torch.Tensor | None = None
    """``(T, N)`` bool, with :attr:`states`: the step begins a learner episode (its state
    was zeroed before acting)."""
    self_play: Any = None
    """Self-play's records of the rollout's games and whom each step may teach
    (:class:`neuroplug.rl.self_play.acting.PlayedRollout`), until the driver books them."""
    guests: torch.Tensor | None = None
    """``(T, N)`` int64, where a population's members play in each other's leagues
    (``selfplay.members``): the member that learns from a step played in an env it does not
    own, -1 elsewhere (:attr:`valid` holds only the owners' steps); None: no such step."""

    def columns(self, envs: slice | torch.Tensor) -> Rollout:
        """The part of this rollout played in the envs ``envs`` (a population member's
        own rollout): views of a slice; an index tensor's envs copied, in its order."""
        return Rollout(
            self.observations[:, envs],
            self.actions[:, envs],
            self.log_probs[:, envs],
            self.values[:, envs],
            self.rewards[:, envs],
            self.terminated[:, envs],
            self.ended[:, envs],
            self.valid[:, envs],
            self.next_values[envs],
            self.last_observations[envs],
            self.policy_version,
            self.states[:, envs] if self.states is not None else None,
            self.starts[:, envs] if self.starts is not None else None,
            guests=self.guests[:, envs] if self.guests is not None else None,
        )


@dataclass
class Episodes:
    """Completed games: true scores and lengths (agent steps)."""

    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    envs: list[int] = field(default_factory=list)
    """The env each game was played in (a population's members own runs of envs)."""
    trained: list[float] = field(default_factory=list)
    """Each game's sum of the rewards the learner trained on (shaped, clipped: what it was
    paid, where :attr:`returns` is what it scored)."""

    def extend(self, other: Episodes) -> None:
        """Append ``other``'s games."""
        self.returns.extend(other.returns)
        self.lengths.extend(other.lengths)
        self.envs.extend(other.envs)
        self.trained.extend(other.trained)


class _EnvGroup:
    """One EnvPool holding a run of consecutive envs of the sampler (one slice of every
    buffer, so no index tensor is built per step)."""

    def __init__(self, steps: RawSteps, rows: slice) -> None:
        self.steps = steps
        self.rows = rows
        self.start = rows.start
        self.env_ids = np.arange(rows.stop - rows.start, dtype=np.int32)
        self.pending = False
        """Whether the pool is stepping (its results not received yet)."""
        self.last_step: int | None = None
        """The rollout row whose actions the pool is stepping (None: a reset)."""
        self.outcomes: list = []
        """This rollout's step results, one :class:`StepBatch` per step, stacked at its end."""
        self.choices: list = []
        """This rollout's (actions, log_probs, values) per step, stacked at its end."""

    def in_order(self, env_ids: np.ndarray) -> bool:
        """Whether a batch came back in env order (EnvPool's synchronous pools do so)."""
        return np.array_equal(env_ids, self.env_ids)


Act = Callable[[torch.Tensor, slice, torch.Tensor | None], Acted]
"""(observations, rows, core states) -> :class:`~neuroplug.rl.acting.Acted`, for one
group's envs: the observations of the sampler's envs ``rows`` (a population's acting reads
from the rows which members' policies to run) and, for a sampler with a ``state_size``,
their recurrent core states ``(n, H)`` (None for a feed-forward policy)."""


class Sampler:
    """``num_envs`` EnvPool envs in ``groups`` groups, kept for the whole run."""

    def __init__(
        self,
        env: EnvSpec,
        num_envs: int,
        groups: int,
        env_threads: int,
        device: torch.device,
        reward_clip: bool = False,
        episodic_life: bool = False,
        unit: int = 1,
        state_size: int = 0,
        run_seed: int = 0,
    ) -> None:
        """``unit``: groups hold whole runs of this many envs (a population member's envs
        stay in one group, so its policy runs once per group step). ``state_size``: the
        width of a recurrent policy's core state, kept here per env (zeroed at each learner
        episode's first step, carried through the episode, across rollouts and segments);
        the policy then acts from it. ``run_seed`` seeds the generator actions are drawn
        from, per segment (:meth:`start_segment`)."""
        self.env = env
        self.num_envs = num_envs
        self.unit = unit
        self.num_groups = max(1, min(groups, num_envs // unit))
        self.env_threads = available_env_threads(env_threads)
        self.device = device
        self.overrides = env.learner_pool_settings(
            reward_clip=reward_clip, episodic_life=episodic_life
        )
        self.groups: list[_EnvGroup] = []
        obs_dtype = torch.uint8 if env.obs_dtype == np.uint8 else torch.float32
        # Page-locked on a GPU machine, so the copy to the device is one DMA transfer.
        self.pending_observations = torch.zeros(
            (num_envs, *env.obs_shape), dtype=obs_dtype, pin_memory=device.type == "cuda"
        ).numpy()
        """Every env's next observation, the one the policy acts on next."""
        self.score = np.zeros(num_envs)
        self.trained = np.zeros(num_envs)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self.after_end = np.zeros(num_envs, dtype=bool)
        """Whether an env's last step ended its learner episode (its next step is a reset)."""
        self.state_size = state_size
        self.state = torch.zeros((num_envs, state_size), device=device) if state_size else None
        """A recurrent policy's core state per env (None for a feed-forward one)."""
        self.episode_start = np.ones(num_envs, dtype=bool)
        """Whether an env's next acted step is the first of a learner episode."""
        self.after_step_end = np.zeros(num_envs, dtype=bool)
        """Whether an env's last received step ended its learner episode (per step, where
        :attr:`after_end` is kept per rollout)."""
        self.episodes = Episodes()
        self.env_steps = 0
        self.forward_passes = 0
        self.timings = {"env": 0.0, "inference": 0.0, "env_setup": 0.0}
        self.run_seed = run_seed
        self.generator = torch.Generator(device)
        """Where :meth:`rollout` draws actions from (re-seeded per segment)."""
        self.step_watcher: Callable[[slice, StepBatch], None] | None = None
        """Called with every step's results of a group's envs (in env order; the envs' first
        reset excepted): self-play's scores and game ends (:mod:`neuroplug.rl.self_play`)."""

    @classmethod
    def for_request(cls, request: SamplerRequest) -> Sampler:
        """The sampler ``request`` describes (:meth:`neuroplug.api.Scheduler.learner_sampler`)."""
        return cls(
            request.env,
            request.num_envs,
            request.groups,
            request.env_threads,
            request.device,
            reward_clip=request.reward_clip,
            episodic_life=request.episodic_life,
            unit=request.unit,
            state_size=request.state_size,
            run_seed=request.run_seed,
        )

    @property
    def started(self) -> bool:
        """Whether the envs are built (they stay so until :meth:`close`)."""
        return bool(self.groups)

    def start(self, seeds: np.ndarray) -> None:
        """Build the envs with one seed each and reset them: every env starts a new episode."""
        self.close()
        started = time.perf_counter()
        threads = max(1, self.env_threads // self.num_groups)
        units = np.array_split(np.arange(self.num_envs // self.unit), self.num_groups)
        for first_units in units:
            indices = np.arange(first_units[0] * self.unit, (first_units[-1] + 1) * self.unit)
            pool = make_pool(self.env, seeds[indices], threads, **self.overrides)
            steps = step_driver(pool, self.env)
            steps.reset()
            group = _EnvGroup(steps, slice(int(indices[0]), int(indices[-1]) + 1))
            group.pending = True
            self.groups.append(group)
        self.score[:] = 0.0
        self.trained[:] = 0.0
        self.length[:] = 0
        self.after_end[:] = False
        self.episode_start[:] = True  # new episodes: recurrent states start from zeros
        self.after_step_end[:] = False
        self.timings["env_setup"] += time.perf_counter() - started

    def start_segment(self, segment: int) -> None:
        """Seed the generator actions are drawn from for ``segment``."""
        self.generator.manual_seed(acting_seed(self.run_seed, segment))

    def take_episodes(self) -> Episodes:
        """The games completed since the last call."""
        episodes, self.episodes = self.episodes, Episodes()
        return episodes

    def rollout(self, acting: Acting, length: int) -> Rollout:
        """Step every env ``length`` times with ``acting`` (refreshed by the caller), its
        actions drawn from :attr:`generator`."""
        generator = self.generator

        def act(observations: torch.Tensor, rows: slice, states: torch.Tensor | None) -> Acted:
            return acting.act(observations, rows, states, generator)

        return self.rollout_with(act, length)

    def rollout_with(self, act: Act, length: int) -> Rollout:
        """Step every env ``length`` times with ``act``; the next observations stay pending
        (the next rollout acts on them, with whatever policy it has by then)."""
        buffers = _Buffers(length, self.num_envs, self.env, self.device, self.state_size)
        for group in self.groups:
            group.outcomes, group.choices = [], []
            if not group.pending:  # received by the last rollout: waiting in pending
                buffers.take_pending(0, group.rows, self.pending_observations)
        for step in range(length):
            for group in self.groups:
                if group.pending:
                    self._receive(group, buffers, step)
                self._act_and_send(group, step, act, buffers)
        for group in self.groups:
            self._receive(group, buffers, None)
        started = time.perf_counter()
        last = torch.from_numpy(self.pending_observations).to(self.device, copy=True)
        next_values = torch.empty(self.num_envs, device=self.device)
        for group in self.groups:
            # Valued from the state the next step will start from; nothing is kept.
            states = None if self.state is None else self._states_for(group.rows)
            next_values[group.rows] = act(last[group.rows], group.rows, states).values
        self.timings["inference"] += time.perf_counter() - started
        return self._finish(buffers, next_values, last)

    def _states_for(self, rows: slice) -> torch.Tensor:
        """The core states the envs ``rows`` act from next: zeros where a learner episode
        begins (a copy; the sampler's own are replaced after acting)."""
        states = self.state[rows].clone()
        starting = self.episode_start[rows]
        if starting.any():
            states[torch.from_numpy(starting).to(states.device)] = 0.0
        return states

    def _act_and_send(self, group: _EnvGroup, step: int, act: Act, buffers: _Buffers) -> None:
        started = time.perf_counter()
        observations = buffers.observations_at(step, group.rows)
        states = None
        if self.state is not None:
            states = self._states_for(group.rows)
            buffers.put_states(step, group.rows, states, self.episode_start[group.rows])
        acted = act(observations, group.rows, states)
        if self.state is not None:
            self.state[group.rows] = acted.states
            self.episode_start[group.rows] = False
        group.choices.append((acted.actions, acted.log_probs, acted.values))
        sent = time.perf_counter()
        self.timings["inference"] += sent - started
        group.steps.send(acted.env_actions, group.env_ids)
        group.pending = True
        group.last_step = step
        self.timings["env"] += time.perf_counter() - sent

    def _receive(self, group: _EnvGroup, buffers: _Buffers, step: int | None) -> None:
        """Take the group's step results: the observations go where the policy reads them
        (row ``step`` of the rollout, or pending for the next rollout when None), the
        outcome is kept for the row whose actions caused it."""
        started = time.perf_counter()
        batch = group.steps.recv()
        self.timings["env"] += time.perf_counter() - started
        if not group.in_order(batch.env_ids):
            batch = _in_env_order(batch)
        if step is None:
            self.pending_observations[group.rows] = batch.observations
        else:
            buffers.put_observations(step, group.rows, batch.observations)
        group.pending = False
        if group.last_step is not None:  # not the results of a reset
            group.outcomes.append(batch)
            if self.step_watcher is not None:
                self.step_watcher(group.rows, batch)
        if group.last_step is not None and self.state is not None:
            # The step after an episode's end is EnvPool's reset (its action ignored); the
            # one after that is the new episode's first acted step.
            rows = group.rows
            self.episode_start[rows] |= self.after_step_end[rows]
            self.after_step_end[rows] = batch.done

    def _finish(self, buffers: _Buffers, next_values: torch.Tensor, last: torch.Tensor) -> Rollout:
        """Stack the groups' steps, then derive validity, episode ends and completed games
        for the whole rollout at once."""
        for group in self.groups:
            buffers.put_group(group.rows, group.choices, group.outcomes)
        done = buffers.done
        valid = ~np.concatenate((self.after_end[None], done[:-1]))
        self.after_end = done[-1].copy()
        self.env_steps += int(valid.sum())
        self.forward_passes += done.size
        self._book_games(
            buffers.game_rewards * valid, buffers.rewards * valid, valid, buffers.game_over & valid
        )
        device = self.device

        def tensor(array: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(array).to(device)

        return Rollout(
            buffers.observations,
            buffers.actions,
            buffers.log_probs,
            buffers.values,
            tensor(buffers.rewards),
            tensor(done & ~buffers.truncated),
            tensor(done),
            tensor(valid),
            next_values,
            last,
            states=buffers.states,
            starts=buffers.starts,
        )

    def _book_games(
        self, rewards: np.ndarray, trained: np.ndarray, counted: np.ndarray, game_over: np.ndarray
    ) -> None:
        """Add the rollout's ``(T, N)`` counted game rewards, trained-on rewards and steps to
        each env's running game; record the games that ended (their true score, what the
        learner was paid in them, their length) and carry the rest.

        Each env's column, preceded by what its running game held, is cut after every game
        over: the pieces that end in one are whole games, the last piece carries on.
        """
        steps = len(rewards)
        rewards = np.concatenate((self.score[None], rewards)).T.ravel()
        trained = np.concatenate((self.trained[None], trained)).T.ravel()
        lengths = np.concatenate((self.length[None], counted)).T.ravel()
        env, step = np.nonzero(game_over.T)
        width = steps + 1
        starts = np.union1d(np.arange(self.num_envs) * width, env * width + step + 2)
        # A game over on a rollout's last step starts the next piece at the next env's column.
        starts = starts[starts < len(rewards)]
        scores = np.add.reduceat(rewards, starts)
        paid = np.add.reduceat(trained, starts)
        counts = np.add.reduceat(lengths, starts)
        finished = np.zeros(len(starts), dtype=bool)
        finished[np.searchsorted(starts, env * width + step + 1, side="right") - 1] = True
        last_piece = np.searchsorted(starts, np.arange(1, self.num_envs + 1) * width) - 1
        ends_last = game_over[-1]
        self.episodes.returns.extend(scores[finished].tolist())
        self.episodes.lengths.extend(counts[finished].astype(int).tolist())
        self.episodes.envs.extend((starts[finished] // width).tolist())
        self.episodes.trained.extend(paid[finished].tolist())
        self.score = np.where(ends_last, 0.0, scores[last_piece])
        self.trained = np.where(ends_last, 0.0, paid[last_piece])
        self.length = np.where(ends_last, 0, counts[last_piece]).astype(np.int64)

    def close(self) -> None:
        """Close the pools (a later :meth:`start` builds new ones)."""
        for group in self.groups:
            group.steps.close()
        self.groups = []


def _in_env_order(batch: StepBatch) -> StepBatch:
    """``batch`` with its rows sorted by env id."""
    order = np.argsort(batch.env_ids)
    return StepBatch(*(field[order] for field in batch))


class _Buffers:
    """The rollout being filled: observations and the policy's choices on the learner's
    device, what the envs returned in host arrays."""

    def __init__(
        self, length: int, num_envs: int, env: EnvSpec, device: torch.device, state_size: int = 0
    ) -> None:
        shape = (length, num_envs)
        self.states = torch.zeros((*shape, state_size), device=device) if state_size else None
        self.starts = torch.zeros(shape, dtype=torch.bool, device=device) if state_size else None
        obs_dtype = torch.uint8 if env.obs_dtype == np.uint8 else torch.float32
        self.observations = torch.empty((*shape, *env.obs_shape), dtype=obs_dtype, device=device)
        # On the CPU the observations' memory is numpy's too: EnvPool's results are copied
        # in by numpy on this thread (torch's copy_ could wake its intra-op threads, which
        # then spin against EnvPool's), and the policy reads them without a copy.
        self.host_observations = self.observations.numpy() if device.type == "cpu" else None
        action_shape = shape if env.discrete else (*shape, env.num_actions)
        action_dtype = torch.int64 if env.discrete else torch.float32
        self.actions = torch.empty(action_shape, dtype=action_dtype, device=device)
        self.log_probs = torch.empty(shape, device=device)
        self.values = torch.empty(shape, device=device)
        self.rewards = np.zeros(shape, dtype=np.float32)
        self.done = np.zeros(shape, dtype=bool)
        self.truncated = np.zeros(shape, dtype=bool)
        self.game_rewards = np.zeros(shape, dtype=np.float64)
        self.game_over = np.zeros(shape, dtype=bool)

    def put_observations(self, step: int, rows: slice, observations: np.ndarray) -> None:
        """Store the observations the policy acts on at ``step`` (one copy to the device)."""
        if self.host_observations is not None:
            self.host_observations[step, rows] = observations
        else:
            self.observations[step, rows].copy_(torch.from_numpy(observations))

    def put_states(self, step: int, rows: slice, states: torch.Tensor, starts: np.ndarray) -> None:
        """Store the core states the policy acts from at ``step``, and where they began."""
        self.states[step, rows] = states
        self.starts[step, rows] = torch.from_numpy(starts).to(self.starts.device)

    def take_pending(self, step: int, rows: slice, pending: np.ndarray) -> None:
        """Store observations received by the previous rollout."""
        self.put_observations(step, rows, pending[rows])

    def observations_at(self, step: int, rows: slice) -> torch.Tensor:
        """What the policy acts on at ``step``: a view, never a copy."""
        if self.host_observations is not None:
            return torch.from_numpy(self.host_observations[step, rows])
        return self.observations[step, rows]

    def put_group(self, rows: slice, choices: list, outcomes: list[StepBatch]) -> None:
        """One group's rollout: its choices stacked on the device (one op per field), its
        step results stacked on the host."""
        actions, log_probs, values = (torch.stack(column) for column in zip(*choices, strict=True))
        self.actions[:, rows] = actions
        self.log_probs[:, rows] = log_probs
        self.values[:, rows] = values
        for name in ("rewards", "done", "truncated", "game_rewards", "game_over"):
            getattr(self, name)[:, rows] = np.stack([getattr(batch, name) for batch in outcomes])
