"""The plugin contract: the base of every plugin kind and the objects that pass between them.

Each kind is an entry-point group (:data:`neuroplug.registry.KINDS`) naming a subclass of
its base here (docs/plugins.md is the guide, :mod:`neuroplug.testing` the checks).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from neuroplug.nets.normalizer import ObservationStats
from neuroplug.plugin_configs.bases import (
    AlgorithmConfig,
    BackendConfig,
    LearnerConfig,
    PluginConfig,
    SchedulerConfig,
)
from neuroplug.plugin_configs.presets import Mutable, Preset

__all__ = [
    "CONTRACT_VERSION",
    "Algorithm",
    "AlgorithmConfig",
    "AlgorithmContext",
    "Backend",
    "BackendConfig",
    "EvaluationRequest",
    "EvaluationResult",
    "Learner",
    "LearnerConfig",
    "LearnerContext",
    "LearnerSampler",
    "Mutable",
    "PluginConfig",
    "Preset",
    "SamplerRequest",
    "Scheduler",
    "SchedulerConfig",
    "Segment",
    "Transitions",
]

if TYPE_CHECKING:
    import torch

    from neuroplug.envs.spec import EnvSpec
    from neuroplug.nets.network import Network
    from neuroplug.nets.policy import Policy
    from neuroplug.population.members import Population
    from neuroplug.rl.acting import Acting
    from neuroplug.rl.sampler import Episodes, Rollout

CONTRACT_VERSION = 1
"""This contract's version: a plugin class saying another (``contract = 0``) is refused."""


@dataclass
class EvaluationRequest:
    """What a scheduler is asked to do for one population."""

    generation: int
    """The generation being evaluated (part of every episode's environment seed)."""
    episodes_per_member: int = 1
    """Episodes per member."""
    seed: int = 0
    """The run's seed; with ``generation`` and the episode index it fixes env seeds."""
    action_noise: float = 0.0
    """Std of Gaussian noise added to continuous actions."""
    action_temperature: float = 0.0
    """Discrete actions drawn from ``softmax(outputs / temperature)`` (0: the argmax),
    by counter-based Gumbel noise of (episode, step), as continuous actions' noise."""
    collect_obs_stats: bool = False
    """Whether to return sums of observations for the normalizer."""
    round: int = 0
    """The generation's evaluation round (part of the env seeds: rounds see other episodes)."""
    behavior: str | None = None
    """The behavior characterisation to return (:mod:`neuroplug.evaluation.behaviors`)."""
    transitions: bool = False
    """Whether to return every step's transition (:class:`Transitions`)."""
    progress: Callable[[int, int, int], None] | None = field(default=None, compare=False)
    """Called now and then as ``progress(episodes_done, episodes_total, env_steps)``; local."""
    episodes: np.ndarray | None = field(default=None, compare=False)
    """Each work item's episode index (its env seed's and its action noise's, member by
    member), where members sit side by side in a multi-agent world; None: each member's
    ``0 .. episodes_per_member - 1`` (every member's k-th episode from the same seed)."""

    def for_members(self, first: int, end: int) -> EvaluationRequest:
        """This request for members ``[first, end)`` of its population (a shard)."""
        if self.episodes is None:
            return self
        per = self.episodes_per_member
        return replace(self, episodes=self.episodes[first * per : end * per])


@dataclass
class Transitions:
    """The steps an evaluation played, one row each, member-major then by step."""

    observations: np.ndarray
    """``(N, *obs)`` what the action was chosen on (raw, as the env gave it)."""
    actions: np.ndarray
    """``(N, A)`` float32 env actions sent, noise included (discrete: ``(N,)`` int32)."""
    rewards: np.ndarray
    """``(N,)`` float32 the env's rewards (not the true score where they differ)."""
    next_observations: np.ndarray
    """``(N, *obs)`` the observation that followed (an episode's last one where it ended)."""
    terminated: np.ndarray
    """``(N,)`` bool: the episode ended there by the task (not by a time limit)."""
    members: np.ndarray
    """``(N,)`` int64 the member that acted."""

    def __len__(self) -> int:
        return len(self.rewards)


@dataclass
class EvaluationResult:
    """What a scheduler returns: per-episode scores and honest counters."""

    returns: np.ndarray
    """``(P, E)`` true game scores (Atari: unclipped, summed over all lives)."""
    lengths: np.ndarray
    """``(P, E)`` agent steps per episode."""
    env_steps: int
    """Agent steps taken in episodes that counted."""
    frames: int
    """Emulator frames: ``env_steps * frame_skip``."""
    forward_passes: int
    """Single-member network evaluations (one per alive member per step)."""
    obs_stats: ObservationStats | None = None
    """Observation sums when the request asked for them."""
    behaviors: np.ndarray | None = None
    """``(P, E, d)`` float64 behavior characterisations, when the request named one."""
    transitions: Transitions | None = None
    """Every step played, when the request asked for them."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase (``env``, ``inference``, ...)."""
    stats: dict[str, float] = field(default_factory=dict)
    """The scheduler's own counters, logged as ``scheduler/<key>`` (summed over rounds)."""

    @property
    def episodes(self) -> int:
        """Episodes played."""
        return int(self.returns.size)

    @property
    def fitness(self) -> np.ndarray:
        """``(P,)`` mean return of each member over its episodes."""
        return self.returns.mean(axis=1)


@dataclass(frozen=True)
class AlgorithmContext:
    """Everything an algorithm is built from besides its config."""

    network: Network
    """The run's network: its layout (``network.layout``) and size (``num_params``)."""
    initial_params: torch.Tensor
    """``(D,)`` float32: the network initialised from the run seed (ES starts here)."""
    seed: int
    """The run seed; seed your RNGs from it (the base class does)."""
    initializer: Callable[[int], torch.Tensor]
    """Picklable: a seed to a fresh ``(D,)`` float32 draw of the network's initialisation."""
    env: EnvSpec | None = None
    """The run's env (spaces and bounds), for critics of its own; None in synthetic tests."""

    @property
    def num_params(self) -> int:
        """Parameters per member (D)."""
        return int(self.initial_params.numel())

    def fresh_params(self, seed: int) -> torch.Tensor:
        """A new ``(D,)`` draw from the network's initialisation distribution for ``seed``."""
        return self.initializer(int(seed)).float()

    def fresh_population(self, seeds: torch.Tensor) -> Population:
        """One member per seed, fresh from the initialisation, described by the seeds alone."""
        from neuroplug.population.members import Population

        return Population.fresh(seeds, self.initializer, self.num_params)


class Algorithm(ABC):
    """Proposes populations and learns from their results (ask/tell), in one or more rounds
    a generation (the rule of rounds: :mod:`neuroplug.evolution.rounds`)."""

    config_class: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    max_rounds_per_generation: ClassVar[int] = 8
    """The most ask/evaluate/tell rounds one generation may take."""
    requires_env: ClassVar[bool] = False
    """Whether it reads ``context.env`` (for critics of its own)."""

    def __init__(self, config: AlgorithmConfig, context: AlgorithmContext) -> None:
        self.config = config
        self.context = context
        self.generation = 0
        """Completed generations."""
        self.best_params: torch.Tensor | None = None
        """``(D,)`` float32: the best member evaluated so far (None: not tracked)."""
        self.rounds_requested = 0
        """Rounds asked for so far with :meth:`continue_generation`."""

    def continue_generation(self) -> None:
        """Call from ``tell``: this generation needs another ask/evaluate/tell round."""
        self.rounds_requested += 1

    def close(self) -> None:  # noqa: B027 - optional hook, most algorithms hold nothing
        """Release resources (called once, when the run ends; default: nothing)."""

    def episodes_per_member(self) -> int:
        """Episodes each member of the next population plays (default: the config's)."""
        return self.config.episodes_per_member

    def behavior(self) -> str | None:
        """The behavior characterisation this algorithm needs per episode (default: none)."""
        return None

    def action_noise(self) -> float:
        """Std of the noise on continuous actions in the next round (default: the config's)."""
        return self.config.action_noise

    def action_temperature(self) -> float:
        """The temperature of discrete actions in the next round (default: the config's)."""
        return self.config.action_temperature

    def wants_transitions(self) -> bool:
        """Whether evaluations return every step's transition (default: no)."""
        return False

    @abstractmethod
    def ask(self) -> Population:
        """The population to evaluate next."""

    @abstractmethod
    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        """Learn from the evaluation of ``population``; return stats, logged as ``algo/<key>``."""

    @abstractmethod
    def policy_params(self) -> torch.Tensor:
        """The ``(D,)`` float32 CPU parameters to deploy now (ES: the center; GA: the elite)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly from here (tensors, arrays, plain values)."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict`."""


@dataclass
class Segment:
    """What a learner reports after one segment: honest counters and true episode scores."""

    env_steps: int
    """Agent steps taken (every env, every step)."""
    frames: int
    """Emulator frames: ``env_steps * frame_skip``."""
    forward_passes: int
    """Observations that went through the policy."""
    returns: np.ndarray
    """True scores of the episodes completed in the segment (Atari: unclipped, all lives)."""
    lengths: np.ndarray
    """Their lengths in agent steps."""
    stats: dict[str, float] = field(default_factory=dict)
    """Scalar training statistics, logged as ``algo/<key>``."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase (``env``, ``inference``, ``learn``, ...)."""
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Rows of the run's own tables (``lineage``), each with the ``segment`` that wrote it."""


@dataclass(frozen=True)
class LearnerContext:
    """Everything a learner is built from besides its config."""

    network: Network
    """The policy network: ``policy_params()`` is a flat vector in its layout."""
    env: EnvSpec
    """The environment the learner's envs are made from."""
    initial_params: torch.Tensor
    """``(D,)`` float32: the network initialised from the run seed."""
    seed: int
    """The run seed."""
    env_threads: int = 0
    """EnvPool threads (0: one per core), from the scheduler's settings."""
    max_env_steps: int | None = None
    """The run's budget in env steps, when it has one (learning-rate schedules end there)."""
    deterministic: bool = False
    """``run.deterministic``: prefer reproducible kernels to the fastest (cuDNN autotuning off)."""
    settings_source: str = ""
    """Where the config's unset fields came from (the start-up line shows it)."""
    samplers: Callable[[SamplerRequest], LearnerSampler | None] | None = None
    """The run's scheduler's :meth:`Scheduler.learner_sampler`: where the envs are stepped."""
    envs_per_shard: int = 0
    """``scheduler.envs_per_shard``: shards of the learner's envs (0: none)."""
    member: int | None = None
    """Its index in a population of learners, which samples for it; None: it runs alone."""
    self_play: Any = None
    """The run's :class:`~neuroplug.config.schema.SelfPlayConfig` when ``selfplay=pool``
    (None otherwise): a lone learner plays its opponents (:mod:`neuroplug.rl.self_play`)."""


class Learner(ABC):
    """A gradient-based learner: drives persistent envs and learns, segment by segment."""

    config_class: ClassVar[type[LearnerConfig]] = LearnerConfig
    trains_recurrent_cores: ClassVar[bool] = False
    """Whether it trains a network with a recurrent core (``net.core``)."""

    def __init__(self, config: LearnerConfig, context: LearnerContext) -> None:
        self.config = config
        self.context = context
        self.segments = 0
        """Completed segments (checkpoints and metrics call it ``segment``)."""
        self.best_params: torch.Tensor | None = None
        """Learners deploy their current policy; they keep no best member."""
        self.notices: list[str] = []
        """Lines for the user, sent to the run's loggers after each call into the learner."""

    @abstractmethod
    def train_segment(self) -> Segment:
        """Sample and learn for ``config.segment_steps`` env steps; ``segments`` grows by one."""

    @abstractmethod
    def policy_params(self) -> torch.Tensor:
        """The ``(D,)`` float32 CPU policy to deploy, in the network's flat layout."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue from the end of the last segment."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict`."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release envs and threads (called once, when the run ends; default: nothing)."""

    def describe(self) -> str:
        """How it computes, beyond its settings, for the start-up line (default: nothing)."""
        return ""


class Backend(ABC):
    """Runs the forward pass of many different members of one network at once."""

    config_class: ClassVar[type[BackendConfig]] = BackendConfig
    runs_virtual_batch_norm: ClassVar[bool] = False
    """Whether :meth:`load` runs networks with virtual batch norm (``net.vbn``)."""
    runs_recurrent_cores: ClassVar[bool] = False
    """Whether :meth:`forward_with_state` runs networks with a recurrent core (``net.core``)."""

    def __init__(self, config: BackendConfig, network: Network) -> None:
        self.config = config
        self.network = network

    @property
    @abstractmethod
    def device(self) -> torch.device:
        """Where observations should be placed for :meth:`forward`."""

    @abstractmethod
    def load(self, population: Population) -> None:
        """Prepare to run the members of ``population`` (called once per evaluation)."""

    def plan(self, population_size: int) -> str:
        """How ``population_size`` dense members will run, for the start-up line ("": as usual)."""
        return ""

    @abstractmethod
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)`` of member ``members[j]`` on ``observations[j]`` (those alone)."""

    @property
    def batch_invariant(self) -> bool:
        """Whether a member's outputs are the same bits whatever shares its :meth:`forward`."""
        return True

    def forward_with_state(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` from recurrent states ``(n, H)``; returns outputs and new states."""
        raise NotImplementedError(f"{type(self).__name__} runs no recurrent core")


@dataclass(frozen=True)
class SamplerRequest:
    """What a learner's sampler is built for (:meth:`Scheduler.learner_sampler`)."""

    env: EnvSpec
    num_envs: int
    """The learner's envs (a population's: every member's)."""
    groups: int
    """Groups of envs stepped in turn (``algo.env_groups``)."""
    env_threads: int
    """EnvPool threads (0: one per core)."""
    device: Any
    """The ``torch.device`` the learner's rollouts go to."""
    reward_clip: bool
    episodic_life: bool
    unit: int
    """Envs that act as one (a population member's): groups and shards never split them."""
    run_seed: int
    state_size: int = 0
    """A recurrent policy's core width (``net.core``): the sampler keeps a state per env."""


class LearnerSampler(Protocol):
    """Where a learner's envs are stepped, for the whole run (:mod:`neuroplug.rl.sampler`)."""

    num_envs: int
    """The learner's envs (a population's: every member's)."""
    env_steps: int
    """Valid env steps sampled so far (EnvPool's auto-reset steps are not counted)."""
    forward_passes: int
    """Observations that went through the policy so far."""
    timings: dict[str, float]
    """Seconds per phase (``env``, ``inference``, ``env_setup``), zeroed per segment."""

    @property
    def started(self) -> bool:
        """Whether the envs are built."""

    def start(self, seeds: np.ndarray) -> None:
        """Build the envs, one seed each, and reset them: every env starts a new episode."""

    def start_segment(self, segment: int) -> None:
        """Seed the action draws of ``segment``."""

    def rollout(self, acting: Acting, length: int) -> Rollout:
        """``length`` steps of every env, the actions chosen by ``acting``."""

    def take_episodes(self) -> Episodes:
        """The games completed since the last call (true scores, lengths, their envs)."""

    def close(self) -> None:
        """Close the envs."""


class Scheduler(ABC):
    """Plays the episodes of a population: env stepping plus batched inference."""

    config_class: ClassVar[type[SchedulerConfig]] = SchedulerConfig

    def __init__(self, config: SchedulerConfig, env: EnvSpec) -> None:
        self.config = config
        self.env = env

    def learner_sampler(self, request: SamplerRequest) -> LearnerSampler | None:
        """A sampler stepping a learner's envs elsewhere, or None: the learner steps them."""
        return None

    @abstractmethod
    def evaluate(
        self,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
    ) -> EvaluationResult:
        """Play ``request.episodes_per_member`` episodes with every member."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release workers and pools (called once, when the run ends; default: nothing)."""
