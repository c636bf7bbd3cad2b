"""``algo=appo``: asynchronous PPO, Sample Factory style.

Petrenko, Huang, Kumar, Sukhatme & Koltun (2020), "Sample Factory: Egocentric 3D Control
from Pixels at 100000 FPS with Asynchronous Reinforcement Learning", ICML 2020. Sampling
and learning run side by side; the sampler waits only when the learner is a full queue
behind (or, with ``drop_when_full``, never)::

    sampler (main thread)                       learner (its own thread)
    loop:                                       loop:
        take the newest published weights           rollout <- queue
        rollout <- T steps of N envs                lag = version - rollout.version
        stamp it with the weights' version          if lag > max_policy_lag: drop it
        queue <- rollout                            targets: GAE, or V-trace (with_vtrace)
          (full queue: wait for room, or            PPO update (E epochs, M minibatches)
           with drop_when_full drop the oldest)
                                                    publish the weights (version += SGD steps)

``version`` counts SGD steps, so the lag is measured in SGD steps as in Sample Factory.
With V-trace (Espeholt et al. 2018) the targets correct for the lag with truncated
importance weights; without it the rollout's own values feed GAE.

What is reproducible: the envs' seeds, and the starting weights and optimizer state of every
segment (a resumed run continues from the checkpoint's). What is not: which weights the
sampler held at each step and which rollouts were dropped depend on thread timing, so two
runs with the same seed differ after the first update; use ``algo=ppo`` where
bit-identical runs matter.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from neuroplug.api import LearnerContext
from neuroplug.rl.acting import ActorCriticActing
from neuroplug.rl.actor_critic import ActorCritic
from neuroplug.rl.advantages import rollout_gae, vtrace
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.rollout_loop import RolloutLoop
from neuroplug.rl.sampler import Rollout
from neuroplug_learners.appo_config import APPOConfig
from neuroplug_learners.ppo import PPOUpdate
from neuroplug_learners.ppo_batches import chunked, flatten
from neuroplug_learners.ppo_stacked import PopulationPPOUpdate, population_ppo_update

_END = None
"""What the sampler puts on the queue when the segment's steps are done."""


class APPO(SegmentLearner):
    """PPO whose sampler and learner run side by side, joined by a bounded queue."""

    config_class = APPOConfig
    trains_recurrent_cores = True
    """``net.core=gru`` trains as in :class:`~neuroplug_learners.ppo.PPO` (the acting copy
    acts from the sampler's states; V-trace re-runs the core over the whole rollout)."""

    def __init__(self, config: APPOConfig, context: LearnerContext) -> None:
        super().__init__(config, context)
        self.update = PPOUpdate(config, self.model)
        # Alone, the sampler acts with its own copy of the weights, so the learner thread
        # can train the model meanwhile.
        self.acting_model = copy.deepcopy(self.model)
        self.acting = ActorCriticActing(
            [SimpleNamespace(model=self.acting_model, device=self.device)], config.num_envs
        )
        self._published: tuple[int, dict[str, torch.Tensor]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def population_update(cls, members, envs_per_member: int) -> PopulationPPOUpdate | None:
        """In a population, members without V-trace learn as one computation, as PPO's do
        (:mod:`neuroplug_learners.ppo_stacked`); with V-trace, one by one."""
        if any(member.config.with_vtrace for member in members):
            return None
        return population_ppo_update(members)

    # ------------------------------------------------------------------ the sampler

    def build_model(self) -> ActorCritic:
        return ActorCritic.for_learner(self.context)

    def describe(self) -> str:
        return self.update.precision_note

    def segment_loop(self, rollout_loop: RolloutLoop) -> tuple[dict[str, float], dict[str, float]]:
        """Sample with the acting copy while the learner thread learns (a population's
        members learn in the rollout loop's synchronous loop instead)."""
        config = self.config
        self.acting_model.load_state_dict(self.model.state_dict())
        acting_version = self.update.version
        rollouts: queue.Queue = queue.Queue(maxsize=config.queue_size)
        report = _LearnerReport()
        learner = threading.Thread(
            target=self._learn_from, args=(rollouts, report), name="appo-learner", daemon=True
        )
        learner.start()
        dropped_full, waited = 0, 0.0
        # As ppo: whole rollouts for the segment's steps (auto-reset steps are not counted,
        # so counting to the target would add a rollout to every segment).
        per_rollout = config.num_envs * config.rollout_length
        # Env-step slots: whole rollouts of every env, or (sampling asynchronously on Ray
        # actors) as many rollouts of the actors' shards as fill the same slots.
        slots_left = rollout_loop.rollouts_per_segment() * per_rollout
        asynchronous = getattr(rollout_loop.sampler, "asynchronous", False)
        try:
            while slots_left > 0 and report.error is None:
                acting_version = self._take_published(acting_version)
                if asynchronous:  # the first actor's rollout back, with the version it used
                    rollout = rollout_loop.sample(
                        config.rollout_length, self.acting, acting_version
                    )
                else:
                    rollout = rollout_loop.sample(config.rollout_length, self.acting)
                    rollout.policy_version = acting_version
                slots_left -= rollout.valid.numel()
                if not config.drop_when_full:
                    started = time.perf_counter()
                    while report.error is None:  # room, or the learner failed
                        try:
                            rollouts.put(rollout, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    waited += time.perf_counter() - started
                    continue
                try:
                    rollouts.put_nowait(rollout)
                except queue.Full:
                    # Never wait for the learner: the oldest waiting rollout makes room.
                    try:
                        rollouts.get_nowait()
                        dropped_full += 1
                    except queue.Empty:
                        pass
                    rollouts.put_nowait(rollout)
        finally:
            rollouts.put(_END)
            learner.join()
        if report.error is not None:
            raise report.error
        lags = np.asarray(report.lags or [0])
        learned_lags = np.asarray(report.learned_lags or [0])
        return (
            {
                **report.stats,
                "policy_lag_mean": float(lags.mean()),
                "policy_lag_max": float(lags.max()),
                "policy_lag_learned_max": float(learned_lags.max()),
                "rollouts_learned": float(report.learned),
                "rollouts_dropped_lag": float(report.dropped_lag),
                "rollouts_dropped_full": float(dropped_full),
            },
            {"learn": report.seconds, "wait_learner": waited},
        )

    def _take_published(self, version: int) -> int:
        """Load the newest published weights into the sampler's copy, if there are newer."""
        with self._lock:
            published = self._published
        if published is None or published[0] == version:
            return version
        self.acting_model.load_state_dict(published[1])
        return published[0]

    # ------------------------------------------------------------------ the learner

    def _learn_from(self, rollouts: queue.Queue, report: _LearnerReport) -> None:
        """The learner thread: train on rollouts until the sampler says the segment is done."""
        try:
            while (rollout := rollouts.get()) is not _END:
                lag = self.update.version - rollout.policy_version
                report.lags.append(lag)
                if lag > self.config.max_policy_lag:
                    report.dropped_lag += 1
                    continue
                report.learned_lags.append(lag)
                started = time.perf_counter()
                report.stats = self.learn_rollout(rollout)
                report.seconds += time.perf_counter() - started
                report.learned += 1
                weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
                with self._lock:
                    self._published = (self.update.version, weights)
        except BaseException as error:  # surfaced by the sampler's thread
            report.error = error
            while rollouts.get() is not _END:  # let the sampler finish putting
                pass

    def learn_rollout(self, rollout: Rollout) -> dict[str, float]:
        """Targets for a (possibly stale) rollout, then the PPO update."""
        config = self.config
        self.update.set_learning_rate_fraction(self.learning_rate_fraction())
        if config.with_vtrace:
            with torch.no_grad():
                self.model.eval()
                if rollout.states is None:
                    flat = rollout.observations.reshape(-1, *rollout.observations.shape[2:])
                    outputs, values = self.model(flat)
                    _, next_values = self.model(rollout.last_observations)
                else:  # the core re-run over the rollout from its first stored states
                    outputs, values, last_states = self.model.sequence(
                        rollout.observations, rollout.states[0], rollout.starts
                    )
                    outputs = outputs.reshape(-1, outputs.shape[-1])
                    _, next_values, _ = self.model.step(rollout.last_observations, last_states)
                actions = rollout.actions.reshape(-1, *rollout.actions.shape[2:])
                log_probs, _ = self.model.log_prob_and_entropy(outputs, actions)
            shape = rollout.values.shape
            advantages, returns = vtrace(
                rollout.log_probs,
                log_probs.reshape(shape),
                rollout.rewards,
                values.reshape(shape),
                next_values,
                rollout.terminated,
                rollout.ended,
                rollout.valid,
                config.gamma,
                config.vtrace_rho,
                config.vtrace_c,
            )
        else:
            advantages, returns = rollout_gae(rollout, config.gamma, config.gae_lambda)
        if rollout.states is not None:
            length = config.recurrence if config.recurrence > 0 else len(rollout.valid)
            chunks = chunked(rollout, advantages, returns, length)
            return self.update.run_chunks(chunks, self.generator)
        return self.update.run(flatten(rollout, advantages, returns), self.generator)

    def _state(self) -> dict[str, Any]:
        return self.update.state_dict()

    def _load_state(self, state: dict[str, Any]) -> None:
        self.update.load_state_dict(state)


class _LearnerReport:
    """What the learner thread tells the sampler's thread at the segment's end."""

    def __init__(self) -> None:
        self.lags: list[int] = []
        """The lag of every rollout taken off the queue, learned or dropped."""
        self.learned_lags: list[int] = []
        """The lags of the rollouts learned from (at most ``max_policy_lag``)."""
        self.stats: dict[str, float] = {}
        self.learned = 0
        self.dropped_lag = 0
        self.seconds = 0.0
        self.error: BaseException | None = None
