"""The base class of neuroplug's learners: segments, seeding, the model, and what a learner
must say to be run by the one learner loop (:mod:`neuroplug.rl.rollout_loop`).

A run is a sequence of segments of ``segment_steps`` env steps: the unit of logging,
checkpointing and evaluation, never an env boundary. The envs are built once, with seeds
from (run seed, the segment they start in), and live for the whole run, so no episode is
cut at a segment's end. Every random stream is re-seeded from (run seed, segment) at each
segment's start.

A lone learner is a population of one: its :meth:`SegmentLearner.train_segment` runs the
same :class:`~neuroplug.rl.rollout_loop.RolloutLoop` a population of learners (``algo=pbt``)
runs, with itself as the only member. A subclass says:

- how it learns from one rollout of its envs (:meth:`SegmentLearner.learn_rollout`) and
  how many steps a rollout has (:meth:`SegmentLearner.rollout_steps`);
- how its members act, all at once (:meth:`SegmentLearner.population_acting`; the
  default serves actor-critics), and, optionally, how their updates stack into one
  computation (:meth:`SegmentLearner.population_update`);
- its model (:meth:`SegmentLearner.build_model`) and its own state.

A learner that learns while it samples (``appo``) also replaces the segment's rollout loop
(:meth:`SegmentLearner.segment_loop`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext, LearnerSampler, Segment
from neuroplug.rl.acting import Acting, ActorCriticActing
from neuroplug.rl.rollout_loop import NEW_EPISODES, RolloutLoop
from neuroplug.rl.sampler import Episodes, Rollout
from neuroplug.runtime.devices import on_cpu, resolve_device
from neuroplug.runtime.seeds import segment_generator_seed

__all__ = ["NEW_EPISODES", "SegmentLearner"]


class SegmentLearner(Learner):
    """Runs segments of a learner: a :class:`Sampler` of envs that live for the whole run,
    and the model :meth:`build_model` makes."""

    def __init__(self, config: LearnerConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.device = resolve_device(config.device, "algo.device")
        if self.device.type == "cuda":
            # Autotuned convolutions: the fastest cuDNN kernels for the learner's shapes.
            torch.backends.cudnn.benchmark = not context.deterministic
        model = self.build_model()
        if not callable(getattr(model, "policy_vector", None)):
            raise TypeError(
                f"{type(self).__name__}.build_model() returned a {type(model).__name__} without "
                "policy_vector(): a learner's model must return its policy as the network's flat "
                "parameter vector (ActorCritic and QNetwork do)"
            )
        self.model = model.to(self.device)
        """The trainable model; ``model.policy_vector()`` is the flat policy vector it deploys."""
        self.env_steps = 0
        """Env steps this learner has sampled over the whole run (its schedules follow it);
        the rollout loop counts them rollout by rollout."""
        self.generator = torch.Generator(self.device)
        """The learner's own stream (minibatch order), re-seeded per segment."""
        self.progress: Callable[[dict[str, Any]], None] | None = None
        """Set by the trainer: called after every rollout with where the segment stands."""
        self._rollout_loop: RolloutLoop | None = None
        if context.member is None:  # alone: a population of one (a member has its population's)
            self._rollout_loop = RolloutLoop(
                context,
                [self],
                config.env_groups,
                self.device,
                resume_keeps="weights, optimizer, RNG streams and counters",
            )

    # ------------------------------------------------------------------ alone

    @property
    def rollout_loop(self) -> RolloutLoop:
        """The loop this learner runs in when it runs alone (a population of one). A
        population's member (``context.member`` set) is run by its population's rollout loop and
        builds none, nor any envs."""
        if self._rollout_loop is None:
            raise RuntimeError(
                f"{type(self).__name__} is member {self.context.member} of a population: "
                "the population's rollout loop runs it"
            )
        return self._rollout_loop

    @property
    def sampler(self) -> LearnerSampler:
        """Where this learner's envs are stepped when it runs alone."""
        return self.rollout_loop.sampler

    def train_segment(self) -> Segment:
        rollout_loop = self.rollout_loop
        segment = rollout_loop.train_segment(self, self.segment_loop)
        segment.stats = {**rollout_loop.member_stats[0], **segment.stats}
        self.segments += 1
        return segment

    def segment_loop(self, rollout_loop: RolloutLoop) -> tuple[dict[str, float], dict[str, float]]:
        """How this learner runs a segment's rollouts when alone; returns (stats, timings).
        The default is the rollout loop's :meth:`~neuroplug.rl.rollout_loop.RolloutLoop.
        synchronous_loop` (sample, learn, repeat); a learner that learns while it samples
        overrides it and samples through :meth:`~neuroplug.rl.rollout_loop.RolloutLoop.sample`."""
        return rollout_loop.synchronous_loop()

    def games_finished(self, games: Episodes) -> None:  # noqa: B027 - optional hook
        """The games that ended in a rollout (a lone learner keeps no per-game record)."""

    def after_rollout(self) -> None:  # noqa: B027 - optional hook
        """Called after this learner learned from a rollout, when alone."""

    # ------------------------------------------------------------------ as a member

    def envs_started(self) -> None:  # noqa: B027 - optional hook
        """Called when the envs start new episodes (a run's start, or a resumed run's)."""

    def start_segment(self, segment: int) -> None:
        """Seed the streams of ``segment`` (the base: the torch generator that orders
        minibatches); a learner with more streams extends it."""
        self.generator.manual_seed(segment_generator_seed(self.context.seed, segment))

    def segment_length(self) -> int:
        """Env steps of the running segment: ``segment_steps``, or what is left of the run's
        budget when less (a run stops at its budget, not a segment past it)."""
        steps = self.config.segment_steps
        budget = self.context.max_env_steps
        if budget:
            steps = min(steps, max(1, budget - self.env_steps))
        return steps

    def rollout_steps(self) -> int:
        """Steps of every env per rollout: the unit :meth:`learn_rollout` learns from
        (``algo.rollout_length``; a learner without that field says its own)."""
        return self.config.rollout_length

    @abstractmethod
    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """Learn from one rollout of this learner's envs (``(T, n, ...)``, the columns of
        its envs when it is a population's member); returns the update's statistics."""

    @classmethod
    def population_acting(cls, members: list[SegmentLearner], envs_per_member: int) -> Acting:
        """How ``members`` (learners of this class; one, when it runs alone) act on their
        envs in one forward. The default serves actor-critic models
        (:class:`~neuroplug.rl.actor_critic.ActorCritic`); a learner with another model or
        another way to choose actions overrides it."""
        return ActorCriticActing(members, envs_per_member)

    @classmethod
    def population_update(cls, members: list[SegmentLearner], envs_per_member: int):
        """An object whose ``learn(rollout)`` updates all ``members`` (learners of this
        class) as one computation from the population's rollout (member k's envs are
        ``k*n .. k*n+n-1``) and returns each member's statistics; None (the default):
        each member learns from its part alone (:meth:`learn_rollout`)."""
        return None

    @abstractmethod
    def build_model(self) -> torch.nn.Module:
        """The model to train (on the CPU; the base moves it to ``algo.device``): an
        :class:`~neuroplug.rl.actor_critic.ActorCritic` (``ActorCritic.for_learner``),
        or any module whose ``policy`` parameter is the flat policy vector."""

    def learning_rate_fraction(self) -> float:
        """1 at the start, falling linearly to 0 at the run's budget (1 without one)."""
        budget = self.context.max_env_steps
        if not budget:
            return 1.0
        return max(0.0, 1.0 - self.env_steps / budget)

    def policy_params(self) -> torch.Tensor:
        return self.model.policy_vector().detach().cpu().float().clone()

    def state_dict(self) -> dict[str, Any]:
        return {
            "segment": self.segments,
            "env_steps": self.env_steps,
            "model": on_cpu(self.model.state_dict()),
            "learner": on_cpu(self._state()),
            **self._league_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        mine, theirs = set(self.model.state_dict()), set(state["model"])
        if mine != theirs:
            raise ValueError(
                f"this checkpoint's {type(self.model).__name__} holds tensors "
                f"{sorted(theirs - mine)[:4]} where this run's has {sorted(mine - theirs)[:4]}: "
                "it was written by another version of neuroplug or with another algo/net; "
                "resume it with the version and settings that wrote it, or start a new run"
            )
        self.segments = int(state["segment"])
        self.env_steps = int(state["env_steps"])
        self.model.load_state_dict(state["model"])
        self._load_state(state["learner"])
        leagues = self._rollout_loop.leagues if self._rollout_loop is not None else None
        if leagues is not None:
            leagues.load_state_dict(state["self_play"])

    def _league_state(self) -> dict[str, Any]:
        """Self-play's pool (``self_play``), when this learner plays one."""
        leagues = self._rollout_loop.leagues if self._rollout_loop is not None else None
        return {} if leagues is None else {"self_play": leagues.state_dict()}

    def close(self) -> None:
        if self._rollout_loop is not None:
            self._rollout_loop.close()

    @abstractmethod
    def _state(self) -> dict[str, Any]:
        """The subclass's own state (optimizer, counters)."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_state`."""
