"""The replay loop every off-policy method runs: ``dqn``, ``td3``, ``sac`` and the gradient
steps of ``cem_rl``, ``erl`` and ``pga_me``.

::

    store what was played in the replay buffer           (a rollout, or an evaluation's steps)
    once it holds max(learning_starts, batch_size) transitions:
        take the gradient steps that are due                (the method says how many)
        each on a minibatch drawn uniformly from the buffer

:class:`Replay` is that loop's state, written once: the buffer (refused in one line before
it is built where it would not fit in memory), when learning starts, the minibatch size,
the sampling stream and what a checkpoint keeps. The sampling stream is a pure function of
(run seed, segment or generation), re-seeded at each one's start, so a resumed run draws
what the uninterrupted run would have drawn. :class:`ReplayLearner` is the learners' loop
on it (one gradient step per env step unless a learner says otherwise); the hybrids call
:class:`Replay` from their generations.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from neuroplug.api import LearnerContext
from neuroplug.envs.spec import EnvSpec
from neuroplug.optim.adam import FusedAdam
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.replay_buffer import ReplayBuffer, restore_or_note
from neuroplug.runtime.devices import refuse_unless_it_fits
from neuroplug.runtime.seeds import replay_sampling_rng


class Replay:
    """A run's replay buffer with its learning start, minibatch size and sampling stream."""

    def __init__(
        self, buffer: ReplayBuffer, learning_starts: int, batch_size: int, seed: int
    ) -> None:
        self.buffer = buffer
        self.learning_starts = int(learning_starts)
        self.batch_size = int(batch_size)
        self.seed = seed
        self.sampling_rng = replay_sampling_rng(seed, 0)

    @classmethod
    def for_run(
        cls,
        env: EnvSpec,
        capacity: int,
        learning_starts: int,
        batch_size: int,
        seed: int,
        num_envs: int = 1,
        n_step: int = 1,
        gamma: float = 0.99,
        from_evaluations: bool = False,
    ) -> Replay:
        """The run's loop, its buffer refused in one line (naming ``algo.buffer_size`` and
        what fits) where it would not fit in memory."""
        needed = ReplayBuffer.bytes_needed(capacity, num_envs, env, from_evaluations)
        refuse_unless_it_fits(
            "algo.buffer_size",
            needed,
            f"{capacity:,} transitions of {env.task_id}",
            lambda room: f"algo.buffer_size <= {int(room / (needed / capacity)):,}",
        )
        buffer = ReplayBuffer(capacity, num_envs, env, n_step, gamma, from_evaluations)
        return cls(buffer, learning_starts, batch_size, seed)

    def __len__(self) -> int:
        return len(self.buffer)

    @property
    def learning(self) -> bool:
        """Whether the buffer holds enough to learn from: ``learning_starts`` transitions and
        a minibatch."""
        return len(self.buffer) >= max(self.learning_starts, self.batch_size)

    def restart_sampling(self, unit: int) -> None:
        """Re-seed the sampling stream for a segment's (or a generation's) start."""
        self.sampling_rng = replay_sampling_rng(self.seed, unit)

    def sample(self, device: torch.device, minibatches: int = 1) -> dict[str, torch.Tensor]:
        """``minibatches`` minibatches drawn uniformly, one after another, as ``minibatches
        x batch_size`` rows (see :meth:`ReplayBuffer.sample`)."""
        return self.buffer.sample(minibatches * self.batch_size, self.sampling_rng, device)

    def state_dict(self, keep_buffer: bool) -> dict[str, Any]:
        """What a checkpoint keeps: the sampling stream's seed, and the buffer where
        ``keep_buffer`` (``algo.checkpoint_replay``)."""
        state: dict[str, Any] = {"replay_seed": self.seed}
        if keep_buffer:
            state["replay"] = self.buffer.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any], notices: list[str]) -> None:
        """Restore the stream's seed and the buffer, or say in ``notices`` that the run
        refills an empty one."""
        self.seed = int(state["replay_seed"])
        restore_or_note(self.buffer, state, notices, self.learning_starts)


class ReplayLearner(SegmentLearner):
    """A learner on the replay loop: each rollout is stored, then (once the buffer is
    :attr:`Replay.learning`) its gradient steps are taken; the updates, the optimizers and
    the buffer are in the checkpoint. A subclass writes :meth:`_gradient_step`, lists its
    optimizers (:meth:`optimizers`) and their learning rates (:meth:`learning_rates`), and
    may say how many steps a rollout owes (:meth:`gradient_steps`), what happens as
    transitions are stored (:meth:`stored`) and what else its checkpoint keeps."""

    losses: tuple[str, ...] = ()
    """The statistics a segment averages (appended to ``self._losses[name]``)."""

    def __init__(self, config, context: LearnerContext) -> None:
        # Refused before anything is built where the buffer would not fit.
        self.replay = Replay.for_run(
            context.env,
            config.buffer_size,
            config.learning_starts,
            config.batch_size,
            context.seed,
            num_envs=config.num_envs,
            n_step=self.n_step_of(config),
            gamma=config.gamma,
        )
        super().__init__(config, context)
        self.updates = 0
        self._losses: dict[str, list[float]] = {name: [] for name in self.losses}

    @classmethod
    def n_step_of(cls, config) -> int:
        """The buffer's n-step return length for ``config`` (1 unless a learner has one)."""
        return 1

    def optimizers(self) -> dict[str, FusedAdam]:
        """The optimizers by name (checkpointed)."""
        raise NotImplementedError

    def learning_rates(self) -> dict[str, float]:
        """Each optimizer's learning rate now, read from the config (a population may
        change it between rollouts)."""
        raise NotImplementedError

    def envs_started(self) -> None:
        self.replay.buffer.restart_streams()

    def start_segment(self, segment: int) -> None:
        super().start_segment(segment)
        self.replay.restart_sampling(segment)
        self._losses = {name: [] for name in self.losses}

    def learn_rollout(self, rollout) -> dict[str, float]:
        """Store the rollout, then take the steps it owes once the buffer is learning."""
        rates = self.learning_rates()
        for name, optimizer in self.optimizers().items():
            for group in optimizer.param_groups:
                group["lr"] = rates[name]
        added = self.replay.buffer.add_rollout(rollout)
        self.stored(added)
        if self.replay.learning:
            self.training_phase(self.gradient_steps(added))
        return self.segment_stats()

    def stored(self, added: int) -> None:  # noqa: B027 - optional hook
        """``added`` transitions were just stored (DQN counts them to its target update)."""

    def gradient_steps(self, added: int) -> int:
        """The gradient steps a rollout of ``added`` transitions owes: one per env step."""
        return added

    def training_phase(self, steps: int) -> None:
        """``steps`` gradient steps, each on a minibatch of its own."""
        for _ in range(steps):
            self._gradient_step(self.replay.sample(self.device))

    def segment_stats(self) -> dict[str, float]:
        """The segment's statistics so far: its mean losses, the updates and the buffer."""
        return {
            name: float(np.mean(values)) if values else math.nan
            for name, values in self._losses.items()
        } | {"updates": float(self.updates), "buffer_size": float(len(self.replay))}

    def _gradient_step(self, batch: dict[str, torch.Tensor]) -> Any:
        raise NotImplementedError

    def _method_state(self) -> dict[str, Any]:
        """What else the method's checkpoint keeps (its target networks)."""
        raise NotImplementedError

    def _load_method_state(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:
        return {
            "method": self._method_state(),
            "optimizers": {name: opt.state_dict() for name, opt in self.optimizers().items()},
            "updates": self.updates,
            **self.replay.state_dict(self.config.checkpoint_replay),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self._load_method_state(state["method"])
        for name, optimizer in self.optimizers().items():
            optimizer.load_state_dict(state["optimizers"][name])
        self.updates = int(state["updates"])
        self.replay.load_state_dict(state, self.notices)
