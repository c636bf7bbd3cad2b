"""The settings of ``algo=appo`` (asynchronous PPO): its config schema, beside
:mod:`neuroplug_learners.appo`.

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.learner_configs`` entry point ``appo``.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuroplug.api import Preset
from neuroplug.errors import require
from neuroplug_learners.ppo_config import PPOUpdateConfig


@dataclass
class APPOConfig(PPOUpdateConfig):
    """APPO (Petrenko et al. 2020, Sample Factory) settings: the PPO update's plus the
    lag's. Unset fields take the preset of the run's kind of task (the start-up line names
    it): on Atari Sample Factory's ``sf_examples/envpool/atari``, CleanRL's PPO values (its
    batch of 256 is 8 envs x 128 steps in 4 minibatches) without V-trace; on discrete
    vector tasks RL Zoo's CartPole PPO with 8 epochs of 2 minibatches, V-trace and a
    one-rollout queue; on continuous ones CleanRL's MuJoCo PPO."""

    max_policy_lag: int = 100
    """Rollouts sampled more than this many SGD steps ago are dropped, not learned from."""
    with_vtrace: bool | None = None
    """V-trace targets and advantages instead of GAE (off in Sample Factory's Atari runs)."""
    vtrace_rho: float = 1.0
    """rho-bar: truncation of the importance weights in the advantages."""
    vtrace_c: float = 1.0
    """c-bar: truncation of the importance weights along the trace."""
    queue_size: int | None = None
    """Rollouts waiting for the learner."""
    drop_when_full: bool = False
    """When the queue is full: drop its oldest rollout, so the sampler never waits (for a
    learner on its own GPU, where sampling is the bottleneck), or, as Sample Factory does,
    wait for room, so every rollout sampled is learned from. Waiting is the default: where
    the learner and the envs share CPU cores, a sampler that runs ahead steals the cores the
    learner needs for rollouts it then drops (``docs/learners/appo.md``)."""

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        ppo = super().presets()
        return {
            "pixels": ppo["pixels"].extended(
                "Sample Factory sf_examples/envpool/atari (CleanRL's PPO values)",
                with_vtrace=False,
                queue_size=2,
            ),
            "doom": ppo["doom"].extended(
                "Sample Factory sf_examples/vizdoom", with_vtrace=False, queue_size=2
            ),
            # Fewer epochs than PPO's 20, so the learner keeps up with the sampler; V-trace
            # corrects the lag, and a one-rollout queue keeps the data fresh.
            "discrete": ppo["discrete"].extended(
                "RL Zoo CartPole-v1 PPO, 8 epochs of 2 minibatches, V-trace",
                epochs=8,
                minibatches=2,
                with_vtrace=True,
                queue_size=1,
            ),
            "continuous": ppo["continuous"].extended(
                "CleanRL ppo_continuous_action.py", with_vtrace=False, queue_size=2
            ),
        }

    def check(self) -> None:
        super().check()
        require(
            self.max_policy_lag >= 0,
            "algo.max_policy_lag",
            f"got {self.max_policy_lag}",
            "an integer >= 0",
        )
        for name in ("vtrace_rho", "vtrace_c"):
            value = getattr(self, name)
            require(value > 0, f"algo.{name}", f"got {value}", "a float > 0")
        require(
            self.queue_size >= 1,
            "algo.queue_size",
            f"got {self.queue_size}",
            "an integer >= 1",
        )
