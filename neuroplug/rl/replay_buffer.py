"""The replay buffer of every off-policy method: each frame stored once.

Consecutive Atari observations share all but one frame of their stack (4 x 84 x 84), and a
transition's next observation is the following one, so storing ``(obs, next_obs)`` per
transition keeps every frame eight times. Here each env has a ring of single frames: an
episode's first observation pushes its whole stack, every step after it pushes its one new
frame, and a transition is the position of its observation's newest frame. One frame per
transition (plus a stack per episode) is ~7 KB on Atari, so a million transitions take
about 7 GB instead of ~56 GB. Vector observations are their own "frame" (a stack of one),
stored once as float32; so are images whose channels are not a stack of frames (a colour
screen, a role's planes beside the frames: :attr:`EnvSpec.frame_stack` is 1).

A transition is sampled only while all of its frames are still in its env's ring.

With ``n_step > 1`` a transition holds the discounted sum of up to ``n`` rewards and
bootstraps from the observation ``horizon`` steps later (Sutton 1988; Hessel et al. 2018
use n = 3 in Rainbow). Its window grows as its env's later steps arrive and closes early at
the episode's end, so a transition is a correct target at every moment: a young one is a
shorter-horizon return, never a wrong one. The next observation is a position in the same
frame ring, so n-step costs no storage beyond one small integer per transition.

Two ways in: a learner's rollouts of fixed envs (:meth:`ReplayBuffer.add_rollout`), and the
steps an evaluation played (:meth:`ReplayBuffer.add_transitions`: ``cem_rl``, ``erl``,
``pga_me``), whole transitions in episode order that go into one ring, a row continuing
the stream where its observation is the row before's next observation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from neuroplug.envs.spec import EnvSpec
from neuroplug.rl.sampler import Rollout

TRANSITION_FIELDS = ("env", "position", "actions", "rewards", "terminated", "horizon")
"""The per-transition arrays (each ``capacity`` long), filled from index 0 until the ring wraps."""


class ReplayBuffer:
    """Transitions of ``num_envs`` envs, the most recent ``capacity`` kept."""

    def __init__(
        self,
        capacity: int,
        num_envs: int,
        env: EnvSpec,
        n_step: int = 1,
        gamma: float = 0.99,
        from_evaluations: bool = False,
    ) -> None:
        if capacity < n_step * num_envs:
            raise ValueError(f"capacity {capacity} < n_step {n_step} x num_envs {num_envs}")
        if from_evaluations and (num_envs != 1 or n_step != 1):
            raise ValueError("a buffer of evaluated transitions has one ring and 1-step returns")
        self.from_evaluations = from_evaluations
        """Fed whole transitions (:meth:`add_transitions`), not rollouts."""
        self.capacity = capacity
        self.n_step = n_step
        self.gamma = gamma
        self.num_envs = num_envs
        self.stack, frame_shape = _frames(env)
        dtype = np.uint8 if env.obs_dtype == np.uint8 else np.float32
        self.frames_per_env = _frames_per_env(capacity, num_envs, self.stack, from_evaluations)
        self.frames = np.zeros((num_envs, self.frames_per_env, *frame_shape), dtype=dtype)
        self.written = np.zeros(num_envs, dtype=np.int64)
        """Frames ever pushed per env (the ring position is this modulo its size)."""
        self.env = np.zeros(capacity, dtype=np.int64)
        self.position = np.zeros(capacity, dtype=np.int64)
        """The absolute position of each transition's newest observation frame."""
        action_shape = () if env.discrete else (env.num_actions,)
        self.actions = np.zeros((capacity, *action_shape), np.int64 if env.discrete else np.float32)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=bool)
        self.horizon = np.zeros(capacity, dtype=np.int64)
        """Rewards summed into each transition (its next observation is this many steps on)."""
        self.pending = np.full((num_envs, n_step - 1), -1, dtype=np.int64)
        """Per env, the transitions of the last ``n_step - 1`` steps whose windows are open
        (most recent first; -1: none)."""
        self.size = 0
        self.next_index = 0
        self._continues = np.zeros(num_envs, dtype=bool)
        """Whether an env's stream ends with the observation its next transition starts from."""

    @staticmethod
    def bytes_needed(
        capacity: int, num_envs: int, env: EnvSpec, from_evaluations: bool = False
    ) -> int:
        """The memory a buffer of ``capacity`` transitions takes, before building it."""
        stack, frame_shape = _frames(env)
        frame_bytes = int(np.prod(frame_shape)) * (1 if env.obs_dtype == np.uint8 else 4)
        frames_per_env = _frames_per_env(capacity, num_envs, stack, from_evaluations)
        frames = num_envs * frames_per_env * frame_bytes
        action_bytes = 8 if env.discrete else 4 * env.num_actions
        return frames + capacity * (8 + 8 + action_bytes + 4 + 1 + 8)

    def __len__(self) -> int:
        return self.size

    @property
    def bytes_per_transition(self) -> float:
        """Storage of frames and fields, divided by the transitions they can hold."""
        fields = (
            self.env,
            self.position,
            self.actions,
            self.rewards,
            self.terminated,
            self.horizon,
        )
        total = self.frames.nbytes + sum(array.nbytes for array in fields)
        return total / self.capacity

    def _push(self, env: int, frames: np.ndarray) -> None:
        for frame in frames:
            self.frames[env, self.written[env] % self.frames_per_env] = frame
            self.written[env] += 1

    def _frames_of(self, observations: np.ndarray) -> np.ndarray:
        """Observations ``(n, *obs)`` as their frames ``(n, stack, *frame)``."""
        return observations.reshape(len(observations), self.stack, *self.frames.shape[2:])

    def add_rollout(self, rollout: Rollout) -> int:
        """Store the rollout's valid transitions; returns how many."""
        observations = rollout.observations.cpu().numpy()
        following = np.concatenate(
            (observations[1:], rollout.last_observations.cpu().numpy()[None]), axis=0
        )
        valid = rollout.valid.cpu().numpy()
        ended = rollout.ended.cpu().numpy()
        actions = rollout.actions.cpu().numpy()
        rewards = rollout.rewards.cpu().numpy()
        terminated = rollout.terminated.cpu().numpy()
        added = 0
        for step in range(len(observations)):
            envs = np.flatnonzero(valid[step])
            if len(envs):
                for env in envs[~self._continues[envs]]:  # new episodes: their whole stacks
                    self._push(env, self._frames_of(observations[step, env][None])[0])
                newest = self._frames_of(following[step, envs])[:, -1]
                self.frames[envs, self.written[envs] % self.frames_per_env] = newest
                self.written[envs] += 1
                index = (self.next_index + np.arange(len(envs))) % self.capacity
                self.env[index] = envs
                self.position[index] = self.written[envs] - 2
                self.actions[index] = actions[step, envs]
                self.rewards[index] = rewards[step, envs]
                self.terminated[index] = terminated[step, envs]
                self.horizon[index] = 1
                self._extend_windows(envs, index, rewards[step, envs], terminated[step, envs])
                self._close_windows(envs[ended[step, envs]])
                self._continues[envs] = ~ended[step, envs]
                self.next_index = (self.next_index + len(envs)) % self.capacity
                self.size = min(self.size + len(envs), self.capacity)
                added += len(envs)
            # The step after an end is a reset: the stream starts afresh.
            self._continues[~valid[step]] = False
        return added

    def add_transitions(
        self,
        observations: np.ndarray,
        actions: np.ndarray,
        rewards: np.ndarray,
        next_observations: np.ndarray,
        terminated: np.ndarray,
    ) -> int:
        """Store whole transitions (the steps an evaluation played, in episode order),
        overwriting the oldest; returns how many. A row whose observation is the row
        before's next observation continues its stream (one new frame); any other row starts
        one (its observation's whole stack first). Equal observations hold equal frames, so
        the test is exact whatever the episode boundaries were."""
        if not self.from_evaluations:
            raise ValueError("this buffer is fed rollouts; build it with from_evaluations=True")
        rows = slice(-self.capacity, None)  # more than the capacity: the newest only
        observations, next_observations = observations[rows], next_observations[rows]
        count = len(observations)
        if not count:
            return 0
        starts = np.ones(count, dtype=bool)
        if count > 1:
            earlier, later = next_observations[:-1], observations[1:]
            starts[1:] = (earlier != later).reshape(count - 1, -1).any(axis=1)
        stacks = self._frames_of(observations)
        newest = self._frames_of(next_observations)[:, -1]
        pushed = starts * self.stack + 1  # frames each row pushes
        ends = np.cumsum(pushed)  # one past each row's next-observation frame
        frames = np.empty((int(ends[-1]), *self.frames.shape[2:]), dtype=self.frames.dtype)
        frames[ends - 1] = newest
        first = ends[starts] - pushed[starts]
        for offset in range(self.stack):
            frames[first + offset] = stacks[starts, offset]
        base = int(self.written[0])
        self.frames[0, (base + np.arange(len(frames))) % self.frames_per_env] = frames
        self.written[0] += len(frames)
        index = (self.next_index + np.arange(count)) % self.capacity
        self.env[index] = 0
        self.position[index] = base + ends - 2  # the observation's newest frame
        self.actions[index] = actions[rows]
        self.rewards[index] = rewards[rows]
        self.terminated[index] = terminated[rows]
        self.horizon[index] = 1
        self.next_index = (self.next_index + count) % self.capacity
        self.size = min(self.size + count, self.capacity)
        return count

    def _extend_windows(
        self, envs: np.ndarray, index: np.ndarray, rewards: np.ndarray, terminated: np.ndarray
    ) -> None:
        """Add this step's rewards to the open n-step windows of ``envs``, then open
        ``index`` (this step's transitions) and close the windows that reached n."""
        if self.n_step == 1:
            return
        open_ = self.pending[envs]
        held = open_ >= 0
        rows = np.nonzero(held)[0]
        earlier = open_[held]
        self.rewards[earlier] += (self.gamma ** self.horizon[earlier]) * rewards[rows]
        self.horizon[earlier] += 1
        self.terminated[earlier] = terminated[rows]
        # Most recent first; the oldest column has just reached n rewards and leaves.
        self.pending[envs] = np.concatenate((index[:, None], open_[:, :-1]), axis=1)

    def _close_windows(self, envs: np.ndarray) -> None:
        """Their episodes ended: no later reward belongs to the open windows."""
        self.pending[envs] = -1

    def restart_streams(self) -> None:
        """The envs were (re)built and reset: their next observations start new streams."""
        self._continues[:] = False
        self.pending[:] = -1

    def sample(
        self, batch: int, generator: np.random.Generator, device: torch.device
    ) -> dict[str, torch.Tensor]:
        """``batch`` transitions whose frames are all still stored, uniformly: observations,
        actions, (n-step) rewards, ``terminated``, next observations and ``discounts``
        (gamma to the horizon, 0 where the episode terminated inside the window)."""
        chosen = np.empty(0, dtype=np.int64)
        while len(chosen) < batch:
            candidates = generator.integers(0, self.size, size=batch)
            oldest = self.position[candidates] - self.stack + 1
            kept = oldest > self.written[self.env[candidates]] - self.frames_per_env
            chosen = np.concatenate((chosen, candidates[kept]))[:batch]
        env, position = self.env[chosen], self.position[chosen]
        horizon = self.horizon[chosen]
        shape = self.frames.shape[3:]  # a frame's height and width
        if self.stack == 1:  # one frame each (vectors, unstacked images): no stack to gather
            observations = self.frames[env, position % self.frames_per_env]
            next_observations = self.frames[env, (position + horizon) % self.frames_per_env]
        else:
            offsets = np.arange(-self.stack + 1, 1)
            slots = (position[:, None] + offsets) % self.frames_per_env
            next_slots = (position[:, None] + offsets + horizon[:, None]) % self.frames_per_env
            # (b, stack, *frame) -> the observations' own shape: the frames' channels in order.
            observations = self.frames[env[:, None], slots].reshape(len(chosen), -1, *shape)
            next_observations = self.frames[env[:, None], next_slots].reshape(
                len(chosen), -1, *shape
            )

        def tensor(array: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(array)).to(device)

        return {
            "observations": tensor(observations),
            "actions": tensor(self.actions[chosen]),
            "rewards": tensor(self.rewards[chosen]),
            "terminated": tensor(self.terminated[chosen]),
            "next_observations": tensor(next_observations),
            "discounts": tensor(
                (self.gamma**horizon * ~self.terminated[chosen]).astype(np.float32)
            ),
        }

    def state_dict(self) -> dict[str, Any]:
        """Everything stored, for checkpoints that keep the buffer: only the filled part
        (until the ring wraps, the first ``size`` transitions and each env's first frames),
        so a checkpoint early in a run is the size of what it has seen."""
        filled_frames = int(min(self.written.max(initial=0), self.frames_per_env))
        state: dict[str, Any] = {
            "frames": self.frames[:, :filled_frames].copy(),
            "written": self.written.copy(),
            "size": self.size,
            "next_index": self.next_index,
        }
        for name in TRANSITION_FIELDS:
            state[name] = getattr(self, name)[: self.size].copy()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` into a buffer of the same capacity and envs."""
        self.frames[:] = 0
        self.frames[:, : state["frames"].shape[1]] = state["frames"]
        self.written = state["written"].copy()
        self.size = int(state["size"])
        self.next_index = int(state["next_index"])
        for name in TRANSITION_FIELDS:
            field = getattr(self, name)
            field[:] = 0
            field[: self.size] = state[name]
        self._continues[:] = False
        self.pending[:] = -1


def restore_or_note(
    buffer: ReplayBuffer, state: dict[str, Any], notices: list[str], learning_starts: int
) -> None:
    """Restore ``buffer`` from a learner's checkpointed ``state["replay"]``, or, where the
    checkpoint kept none (``algo.checkpoint_replay`` off), say in ``notices`` that the run
    goes on with an empty buffer."""
    if "replay" in state:
        buffer.load_state_dict(state["replay"])
        return
    notices.append(
        "resumed with an empty replay buffer (algo.checkpoint_replay was off): it "
        f"refills for {learning_starts} steps before learning goes on"
    )


def _frames(env: EnvSpec) -> tuple[int, tuple[int, ...]]:
    """How ``env``'s observations are stored: frames an observation stacks, and a frame's
    shape (a stacked image's channels per frame; an unstacked image or a vector whole)."""
    if env.is_image and env.frame_stack > 1:
        channels, *sides = env.obs_shape
        return env.frame_stack, (channels // env.frame_stack, *sides)
    return 1, tuple(env.obs_shape)


def _frames_per_env(capacity: int, num_envs: int, stack: int, from_evaluations: bool) -> int:
    """Frames each env's ring holds: room for every transition's frame plus an episode's
    stack now and then; fed evaluations, room for every transition to start an episode
    (its stack and its next frame), so no stored transition ever loses a frame."""
    if from_evaluations:
        return capacity * (stack + 1)
    return capacity // num_envs + 4 * (stack + 1)
