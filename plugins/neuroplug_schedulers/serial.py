"""``scheduler=serial``: step one synchronous EnvPool, then run inference, in turn.

The population's episodes (members x episodes per member) fill up to ``max_envs`` slots
of one EnvPool; each slot plays exactly one episode, seeded by its episode index (see
:mod:`neuroplug.envs.make`). Every step, only the members whose episodes are alive go
through the backend; finished slots are ignored until the wave ends. When there are more
episodes than slots, they run in waves. When the request names a behaviour
characterisation, each episode's is read from the step that ends it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from neuroplug.api import Backend, EvaluationRequest, EvaluationResult, Scheduler, SchedulerConfig
from neuroplug.behaviours import resolve
from neuroplug.envs.make import episode_seeds, make_pool
from neuroplug.episodes import EpisodeLedger
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
        # Resolved before any pool starts, so a BC that does not fit the env fails first.
        behaviour = resolve(request.behaviour, self.env) if request.behaviour is not None else None
        ledger = EpisodeLedger(len(population), request, self.env.frame_skip, behaviour)
        rng = np.random.default_rng([request.seed, request.generation, request.round, 0xAC7])
        backend.load(population)
        for start in range(0, len(ledger), self.config.max_envs):
            wave = np.arange(start, min(start + self.config.max_envs, len(ledger)))
            self._play_wave(wave, ledger, policy, backend, request, rng)
        return ledger.result()

    def _play_wave(
        self,
        wave: np.ndarray,
        ledger: EpisodeLedger,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
        rng: np.random.Generator,
    ) -> None:
        """Play the work items in ``wave`` to the end, one EnvPool slot each."""
        with ledger.timing("env"):
            seeds = episode_seeds(
                request.seed, request.generation, ledger.episode[wave], request.round
            )
            pool = make_pool(self.env, seeds, self.config.num_threads)
            observations, info = pool.reset()
        members = torch.from_numpy(ledger.member[wave])
        if self.env.discrete:
            actions = np.zeros(len(wave), dtype=np.int32)
        else:
            actions = np.zeros((len(wave), self.env.num_actions), dtype=np.float32)
        alive = np.ones(len(wave), dtype=bool)
        # Atari: info["reward"] is the unclipped game reward whatever the wrappers do.
        use_game_score = self.env.family == "atari"
        while alive.any():
            slots = np.flatnonzero(alive)
            observations = observations[np.argsort(info["env_id"])]
            with ledger.timing("inference"):
                ledger.record_inference(observations[slots])
                inputs = policy.prepare(observations[slots], backend.device)
                outputs = backend.forward(members[slots], inputs)
                nonfinite = ~torch.isfinite(outputs).all(dim=1).cpu().numpy()
                if nonfinite.any():
                    ledger.record_invalid(wave[slots[nonfinite]])
                actions[slots] = policy.actions(outputs, rng, request.action_noise)
            with ledger.timing("env"):
                observations, reward, terminated, truncated, info = pool.step(actions)
            order = np.argsort(info["env_id"])
            reward = (info["reward"] if use_game_score else reward)[order]
            done = (terminated | truncated)[order]
            ledger.record_step(wave[slots], reward[slots])
            ended = slots[done[slots]]
            ledger.record_ends(wave[ended], observations, info, order[ended])
            alive[ended] = False
        pool.close()
