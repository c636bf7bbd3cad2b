"""The base class of neuroplug's learners: segments, seeding, the sampler and the model.

A run is a sequence of segments of ``segment_steps`` env steps: the unit of logging,
checkpointing and evaluation, never an env boundary. The envs are built once, with seeds
from (run seed, the segment they start in), and live for the whole run, so no episode is
cut at a segment's end. The action-sampling generator is re-seeded from (run seed,
segment) at each segment's start.

Resuming: EnvPool cannot save an env in the middle of an episode, so a resumed run builds
its envs anew, seeded from (run seed, the segment it resumes at), and they start new
episodes; the learner says so once. Everything else continues exactly: weights, optimizer,
RNG streams and counters. A resumed run is itself reproducible (the same checkpoint resumed
twice ends in the same state on CPU); it differs from the uninterrupted run from the
resume on, because the games in progress there were lost.

A subclass writes :meth:`_train` (sample with :meth:`sample` and learn until the segment's
steps are done) and lists its own state. A learner that also says how it learns from one
rollout (:meth:`SegmentLearner.learn_rollout`) can be a member of a population
(``algo=pbt``): the population samples for all its members at once (their acting in one
forward, :meth:`SegmentLearner.population_acting`) and hands each its own rollout.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext, SamplerRequest, Segment
from neuroplug.devices import on_cpu, resolve_device
from neuroplug.errors import PluginError
from neuroplug.rl.sampler import Episodes, Rollout
from neuroplug.rl.shards import ShardedSampler, learner_sampler, sampler_report
from neuroplug.seeds import segment_episode_seeds, segment_generator_seed

NEW_EPISODES = "start new episodes"
"""The words of a resumed learner's notice (its envs begin new games)."""


class SegmentLearner(Learner):
    """Runs segments of a learner: a :class:`Sampler` of envs that live for the whole run,
    and the model :meth:`build_model` makes."""

    def __init__(self, config: LearnerConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        env = context.env
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
        self.sampler = learner_sampler(
            context,
            SamplerRequest(
                env,
                config.num_envs,
                config.env_groups,
                context.num_threads,
                self.device,
                config.reward_clip,
                config.episodic_life,
                unit=1,
                run_seed=context.seed,
                state_size=context.network.state_size,
            ),
        )
        """Where the envs are stepped: a :class:`Sampler` here, or shards of them
        (:class:`~neuroplug.rl.shards.ShardedSampler`: here or on Ray actors)."""
        self._shard_acting = None
        self.env_steps = 0
        """Env steps sampled over the whole run (learning-rate schedules follow it)."""
        self.generator = torch.Generator(self.device)
        self._segment_start = 0
        self.progress: Callable[[dict[str, Any]], None] | None = None
        """Set by the trainer: called after every rollout with where the segment stands."""
        self._segment_episodes = Episodes()
        self._segment_clock = 0.0

    def train_segment(self) -> Segment:
        segment = self.generation
        sampler = self.sampler
        sampler.timings = dict.fromkeys(sampler.timings, 0.0)
        if not sampler.started:
            self._start_envs(segment)
        self.start_segment(segment)
        before = (sampler.env_steps, sampler.forward_passes)
        self._segment_start = sampler.env_steps
        self._segment_episodes = Episodes()
        self._segment_clock = time.perf_counter()
        stats, timings = self._train()
        stats = {**stats, **sampler_report(sampler, self.notices)}
        episodes = self._segment_episodes
        episodes.extend(sampler.take_episodes())
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

    def _start_envs(self, segment: int) -> None:
        """Build the envs, seeded from (run seed, ``segment``); past segment 0 that is a
        resumed run, whose games in progress were lost: say so."""
        seeds = segment_episode_seeds(self.context.seed, segment, self.config.num_envs)
        self.sampler.start(seeds)
        self.envs_started()
        if segment > 0:
            self.notices.append(
                f"resumed at segment {segment}: the {self.config.num_envs} envs {NEW_EPISODES} "
                "(EnvPool cannot save an env mid-episode; the games in progress at the "
                "checkpoint are not counted); weights, optimizer, RNG streams and counters "
                "continue exactly"
                + (
                    "; the recurrent core's states start at zero with the new episodes"
                    if self.context.network.state_size
                    else ""
                )
            )

    def envs_started(self) -> None:  # noqa: B027 - optional hook
        """Called when the envs start new episodes (a run's start, or a resumed run's)."""

    def start_segment(self, segment: int) -> None:
        """Seed the streams of ``segment`` (the base: the torch generator that samples
        actions and orders minibatches); a learner with more streams extends it."""
        self.generator.manual_seed(segment_generator_seed(self.context.seed, segment))
        if isinstance(self.sampler, ShardedSampler):
            self.sampler.start_segment(segment)

    def sample(self, act: Callable[[torch.Tensor], tuple], length: int) -> Rollout:
        """One rollout of ``length`` steps of every env with ``act`` (observations ->
        actions, log-probs, values, env actions); then tell the trainer's progress."""
        if isinstance(self.sampler, ShardedSampler):
            rollout = self.sampler.rollout(self.shard_acting(), length)
        elif self.sampler.state_size:  # a recurrent policy: the sampler keeps its states
            rollout = self.sampler.rollout(
                lambda observations, rows, states: act(observations, states), length
            )
        else:
            rollout = self.sampler.rollout(lambda observations, rows: act(observations), length)
        self._sampled()
        return checked_for_states(rollout, self.sampler, self.context.network.state_size)

    def sample_as_ready(self, version: int, length: int) -> Rollout:
        """Asynchronous sampling, where the sampler offers it (``scheduler=ray``): the next
        rollout of some of the envs to come back (``length`` steps), acted with the newest
        weights its sampler had; ``version`` is the current acting weights' version."""
        rollout = self.sampler.rollout_as_ready(self.shard_acting(), version, length)
        self._sampled()
        return checked_for_states(rollout, self.sampler, self.context.network.state_size)

    def _sampled(self) -> None:
        """After a rollout: its finished games, and where the segment stands."""
        self._segment_episodes.extend(self.sampler.take_episodes())
        if self.progress is not None:
            steps = self.sampler.env_steps - self._segment_start
            self.progress(
                segment_progress(
                    self.generation + 1,
                    steps,
                    self.segment_length(),
                    steps * self.context.env.frame_skip,
                    time.perf_counter() - self._segment_clock,
                    self._segment_episodes,
                )
            )

    def shard_acting(self):
        """How this learner acts on envs in shards: its
        :meth:`population_acting` as a population of one, refreshed with the current
        weights (each shard then draws its actions from its own generator)."""
        if self._shard_acting is None:
            self._shard_acting = type(self).population_acting([self], self.config.num_envs)
        self._shard_acting.refresh()
        return self._shard_acting

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

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """Learn from one rollout of this learner's envs; returns the update's statistics.
        A learner that writes it can be a member of a population (``algo=pbt``)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not say how it learns from one rollout "
            "(SegmentLearner.learn_rollout), so it cannot be a population's member"
        )

    @classmethod
    def population_acting(cls, members: list[SegmentLearner], envs_per_member: int):
        """How ``members`` (learners of this class) act on their envs in one forward: a
        :class:`~neuroplug.rl.population_acting.PopulationActing`. The default
        serves actor-critic models (:class:`~neuroplug.rl.actor_critic.ActorCritic`);
        a learner with another model or another way to choose actions overrides it."""
        from neuroplug.rl.population_acting import ActorCriticActing

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

    def act(self, observations: torch.Tensor, states: torch.Tensor | None = None):
        """The sampler's policy: sample with the current weights (an actor-critic's; a
        learner with another model overrides this). A recurrent policy acts from its core
        ``states`` and also returns the new ones."""
        acting = self.model.act(observations, self.generator, states)
        chosen = (
            acting.actions,
            acting.log_probs,
            acting.values,
            self.model.env_actions(acting.actions),
        )
        return chosen if states is None else (*chosen, acting.states)

    def learning_rate_fraction(self) -> float:
        """1 at the start, falling linearly to 0 at the run's budget (1 without one)."""
        budget = self.context.max_env_steps
        if not budget:
            return 1.0
        done = self.env_steps + self.sampler.env_steps - self._segment_start
        return max(0.0, 1.0 - done / budget)

    def policy_params(self) -> torch.Tensor:
        return self.model.policy_vector().detach().cpu().float().clone()

    def state_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "env_steps": self.env_steps,
            "model": on_cpu(self.model.state_dict()),
            "learner": on_cpu(self._state()),
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
        """The subclass's own state (optimizer, counters)."""

    @abstractmethod
    def _load_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_state`."""


def checked_for_states(rollout: Rollout, sampler: Any, state_size: int) -> Rollout:
    """``rollout``, refused (:class:`PluginError`) when a recurrent policy's rollout comes
    back without the core states it acted from: a scheduler's sampler that ignores
    ``SamplerRequest.state_size`` would otherwise train the core from zeros at every step."""
    if state_size and rollout.states is None:
        raise PluginError(
            f"{type(sampler).__name__} returned a rollout without core states for a "
            f"recurrent policy (state size {state_size}): a learner sampler must keep each "
            "env's state and store it in Rollout.states and Rollout.starts"
        )
    return rollout


def segment_progress(
    generation: int,
    env_steps: int,
    segment_steps: int,
    frames: int,
    seconds: float,
    games: Episodes,
) -> dict[str, Any]:
    """Where a running segment stands, for the trainer's progress lines: its steps and
    frames so far, their rate, and its games (the last ten's mean true score)."""
    recent = games.returns[-10:]
    return {
        "phase": "segment",
        "generation": generation,
        "env_steps": env_steps,
        "segment_steps": segment_steps,
        "frames": frames,
        "frames_per_second": frames / max(seconds, 1e-9),
        "episodes_done": len(games.returns),
        "recent_return": float(np.mean(recent)) if recent else float("nan"),
    }
