"""The base class of neuroplug's learners: segments, seeding, the sampler and the model.

A run is a sequence of segments of ``segment_steps`` env steps. At a segment's start the
envs are rebuilt with seeds from (run seed, segment) and the action-sampling generator is
re-seeded the same way, so a synchronous learner resumed from the checkpoint at a
segment's end continues exactly as if it had never stopped (the checkpoint holds the
weights, the optimiser and the step count). A subclass writes :meth:`_train` (sample and
learn until the segment's steps are done) and lists its own state.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext, Segment
from neuroplug.devices import resolve_device
from neuroplug.envs.make import episode_seeds
from neuroplug.errors import require
from neuroplug.learners.actor_critic import ActorCritic
from neuroplug.learners.sampler import Sampler

SEGMENT_ROUND = 0x1EA
"""Env seeds of learner segments live in their own round, apart from evaluations'."""


class SegmentLearner(Learner):
    """Runs segments of a learner on a :class:`Sampler` and an :class:`ActorCritic`."""

    def __init__(self, config: LearnerConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        env = context.env
        for field in ("reward_clip", "episodic_life"):
            require(
                not getattr(config, field) or env.family == "atari",
                f"algo.{field}",
                f"is an Atari setting; {env.task_id} is a {env.family} task",
                "false",
            )
        self.device = resolve_device(config.device, "algo.device")
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        if self.device.type == "cuda":
            # Autotuned convolutions: the fastest cuDNN kernels for the learner's shapes.
            torch.backends.cudnn.benchmark = not context.deterministic
        self.model = ActorCritic(context.network, env, context.initial_params, context.seed).to(
            self.device
        )
        self.sampler = Sampler(
            env,
            config.num_envs,
            config.env_groups,
            context.num_threads,
            self.device,
            reward_clip=config.reward_clip,
            episodic_life=config.episodic_life,
        )
        self.env_steps = 0
        """Env steps sampled over the whole run (learning-rate schedules follow it)."""
        self.generator = torch.Generator(self.device)
        self._segment_start = 0

    def train_segment(self) -> Segment:
        segment = self.generation
        seeds = episode_seeds(
            self.context.seed, segment, np.arange(self.config.num_envs), SEGMENT_ROUND
        )
        sequence = np.random.SeedSequence([self.context.seed, segment, SEGMENT_ROUND])
        self.generator.manual_seed(int(sequence.generate_state(1, dtype=np.uint64)[0] >> 1))
        sampler = self.sampler
        before = (sampler.env_steps, sampler.forward_passes)
        self._segment_start = sampler.env_steps
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)
        sampler.start(seeds)
        stats, timings = self._train()
        episodes = sampler.take_episodes()
        env_steps = sampler.env_steps - before[0]
        self.env_steps += env_steps
        self.generation += 1
        return Segment(
            env_steps=env_steps,
            frames=env_steps * self.context.env.frame_skip,
            forward_passes=sampler.forward_passes - before[1],
            returns=np.asarray(episodes.returns, dtype=np.float64),
            lengths=np.asarray(episodes.lengths, dtype=np.int64),
            stats=stats,
            timings={**sampler.timings, **timings},
        )

    def segment_length(self) -> int:
        """Env steps of the running segment: ``segment_steps``, or what is left of the run's
        budget when less (a run stops at its budget, not a segment past it)."""
        steps = self.config.segment_steps
        budget = self.context.max_env_steps
        if budget:
            steps = min(steps, max(1, budget - self.env_steps))
        return steps

    def act(self, observations: torch.Tensor):
        """The sampler's policy: sample with the current weights."""
        acting = self.model.act(observations, self.generator)
        return (
            acting.actions,
            acting.log_probs,
            acting.values,
            self.model.env_actions(acting.actions),
        )

    def learning_rate_fraction(self) -> float:
        """1 at the start, falling linearly to 0 at the run's budget (1 without one)."""
        budget = self.context.max_env_steps
        if not budget:
            return 1.0
        done = self.env_steps + self.sampler.env_steps - self._segment_start
        return max(0.0, 1.0 - done / budget)

    def policy_params(self) -> torch.Tensor:
        return self.model.policy.detach().cpu().float().clone()

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "env_steps": self.env_steps,
            "model": {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()},
            "learner": self._state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generation = int(state["generation"])
        self.env_steps = int(state["env_steps"])
        self.model.load_state_dict(state["model"])
        self._load_state(state["learner"])

    def close(self) -> None:
        self.sampler.close()

    @abstractmethod
    def _train(self) -> tuple[dict[str, float], dict[str, float]]:
        """Sample and learn for :meth:`segment_length` env steps; returns (stats, timings)."""

    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """The subclass's own state (optimiser, counters)."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_state`."""
