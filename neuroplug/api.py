"""Every contract a plugin honours, in one file.

An evolutionary generation flows through three plugin kinds::

    population = algorithm.ask()                                       # Algorithm
    backend.load(population)                                           # Backend
    result = scheduler.evaluate(population, policy, backend, request)  # Scheduler
    algorithm.tell(population, result)

A gradient-based learner (:class:`Learner`, same ``algo`` group) drives its own envs
instead, through a :class:`LearnerSampler`: ``segment = learner.train_segment()``; both
families' deployed policies are evaluated by the scheduler and backend.

Each kind is an entry-point group (:data:`neuroplug.registry.KINDS`); the entry point
names a class that subclasses the matching base below and sets ``config_class`` to a
dataclass deriving from the matching config base: the plugin's Hydra schema, stored under
its group so ``algo=<name>`` works once the package is installed. Check values in the
config with :func:`neuroplug.errors.require` (one line naming the field and what is
allowed). The guide, with a worked plugin of each kind, is docs/plugins.md; the checks a
plugin's tests run are in :mod:`neuroplug.testing`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from neuroplug.errors import PluginError
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
]

if TYPE_CHECKING:
    import torch

    from neuroplug.envs.spec import EnvSpec
    from neuroplug.nets.network import Network
    from neuroplug.nets.policy import Policy
    from neuroplug.population.members import Population
    from neuroplug.rl.acting import Acting
    from neuroplug.rl.sampler import Episodes, Rollout


# --------------------------------------------------------------------------- contract

CONTRACT_VERSION = 1
"""The version of the contracts in this file (1 with neuroplug 0.1.0, the first release). A
plugin class may say which version it was written for (``contract = 1``, a class
attribute); one written for another version is refused when it loads, in one line naming
its distribution, both versions and where the changes are listed (CHANGELOG.md)."""


# --------------------------------------------------------------------------- data


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
    collect_obs_stats: bool = False
    """Whether to return sums of observations for the normalizer."""
    round: int = 0
    """Which evaluation round of the generation this is (the GA re-evaluates its best
    candidates in round 1); part of the env seeds so rounds see different episodes."""
    behavior: str | None = None
    """Which behavior characterisation to return per episode (None: none); see
    :mod:`neuroplug.evaluation.behaviors` for the names."""
    transitions: bool = False
    """Whether to return every step's transition (:class:`Transitions`), for algorithms
    that learn off-policy from the population's experience (CEM-RL, ERL)."""
    progress: Callable[[int, int, int], None] | None = field(default=None, compare=False)
    """Optional: call ``progress(episodes_done, episodes_total, env_steps)`` now and then
    while the evaluation runs (the trainer shows it); never sent to other processes."""


@dataclass
class Transitions:
    """The steps an evaluation played, one row each, ordered by work item (member-major)
    and step, whichever schedule played them."""

    observations: np.ndarray
    """``(N, *obs)`` what the action was chosen on (raw, as the env gave it)."""
    actions: np.ndarray
    """``(N, A)`` float32 the env actions sent (continuous: in the box, noise included;
    discrete: ``(N,)`` int32)."""
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

    @classmethod
    def concatenate(cls, parts: list[Transitions]) -> Transitions:
        """One batch of ``parts`` in order."""
        return cls(
            *(
                np.concatenate([getattr(part, name) for part in parts])
                for name in _TRANSITION_FIELDS
            )
        )

    def take(self, rows: np.ndarray) -> Transitions:
        """The rows ``rows``, in that order."""
        return Transitions(*(getattr(self, name)[rows] for name in _TRANSITION_FIELDS))


_TRANSITION_FIELDS = (
    "observations",
    "actions",
    "rewards",
    "next_observations",
    "terminated",
    "members",
)


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
    """The scheduler's own counters (e.g. bytes sent to workers), logged as
    ``scheduler/<key>`` and summed over a generation's rounds."""

    @property
    def episodes(self) -> int:
        """Episodes played."""
        return int(self.returns.size)

    @property
    def fitness(self) -> np.ndarray:
        """``(P,)`` mean return of each member over its episodes."""
        return self.returns.mean(axis=1)


# --------------------------------------------------------------------------- plugins


@dataclass(frozen=True)
class AlgorithmContext:
    """Everything an algorithm is built from besides its config (one object, so the
    contract can grow without changing every plugin's constructor)."""

    network: Network
    """The run's network: its layout (``network.layout``) and size (``num_params``)."""
    initial_params: torch.Tensor
    """``(D,)`` float32: the network initialised from the run seed (ES starts here)."""
    seed: int
    """The run seed; seed your RNGs from it (the base class does)."""
    initializer: Callable[[int], torch.Tensor]
    """Maps a seed to a fresh ``(D,)`` float32 draw from the network's initialisation
    distribution; picklable, so a population of fresh draws travels as seeds."""
    env: EnvSpec | None = None
    """The run's env (observation shape, action space and bounds), for algorithms that
    learn a critic beside the population (CEM-RL, ERL); None in synthetic tests."""

    @property
    def num_params(self) -> int:
        """Parameters per member (D)."""
        return int(self.initial_params.numel())

    @classmethod
    def for_network(
        cls, network: Network, seed: int, env: EnvSpec | None = None
    ) -> AlgorithmContext:
        """The context of a run on ``env``: ``network`` initialised from ``seed``."""
        from neuroplug.nets.network import SeededInitializer

        initializer = SeededInitializer(network)
        return cls(network, initializer(seed), seed, initializer, env)

    def fresh_params(self, seed: int) -> torch.Tensor:
        """A new ``(D,)`` draw from the network's initialisation distribution for ``seed``."""
        return self.initializer(int(seed)).float()

    def fresh_population(self, seeds: torch.Tensor) -> Population:
        """One member per seed, fresh from the initialisation, described by the seeds alone."""
        from neuroplug.population.members import Population

        return Population.fresh(seeds, self.initializer, self.num_params)


class Algorithm(ABC):
    """Proposes populations and learns from their results (ask/tell).

    A generation is one or more ask/evaluate/tell rounds: most algorithms need one, the
    deep GA a second to re-evaluate its best candidates. Each ``tell`` either ends the
    generation (``generation`` grows by one) or asks for another round by calling
    :meth:`continue_generation` — exactly one of the two, or the trainer stops with an
    error naming the plugin. The trainer checkpoints only between generations.
    """

    config_class: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    max_rounds_per_generation: ClassVar[int] = 8
    """The most ask/evaluate/tell rounds one generation may take (a runaway plugin fails
    with a clear error instead of looping)."""
    requires_env: ClassVar[bool] = False
    """Whether it reads ``context.env`` (an action space and its bounds, for critics of its
    own): :func:`neuroplug.testing.check_algorithm_contract` then runs it on a small
    continuous-control task."""

    def __init__(self, config: AlgorithmConfig, context: AlgorithmContext) -> None:
        self.config = config
        self.context = context
        self.generation = 0
        """Completed generations."""
        self.best_params: torch.Tensor | None = None
        """``(D,)`` float32: the best member evaluated so far (None when the algorithm does
        not track one); the trainer saves it in ``best_policy.pt`` for ``--which best``."""
        self._rounds_requested = 0

    def continue_generation(self) -> None:
        """Call from ``tell``: this generation needs another ask/evaluate/tell round."""
        self._rounds_requested += 1

    def round_marker(self) -> tuple[int, int]:
        """Where the algorithm stands before a ``tell`` (see :meth:`generation_ended`)."""
        return self.generation, self._rounds_requested

    def generation_ended(self, before: tuple[int, int]) -> bool:
        """Whether the ``tell`` since ``before`` ended the generation (False: another round).

        Raises :class:`neuroplug.errors.PluginError` unless it did exactly one of the two.
        """
        generation, requested = before
        advanced, asked = self.generation - generation, self._rounds_requested - requested
        if (advanced, asked) == (1, 0):
            return True
        if (advanced, asked) == (0, 1):
            return False
        raise PluginError(
            f"{type(self).__name__}.tell() must either end the generation (generation "
            f"{generation} -> {generation + 1}) or call continue_generation() once; it moved "
            f"generation to {self.generation} and asked for {asked} more round(s)"
        )

    def close(self) -> None:  # noqa: B027 - optional hook, most algorithms hold nothing
        """Release resources (called once, when the run ends; default: nothing)."""

    def episodes_per_member(self) -> int:
        """Episodes each member of the next population plays (default: the config's)."""
        return self.config.episodes_per_member

    def behavior(self) -> str | None:
        """The behavior characterisation this algorithm needs per episode (default: none)."""
        return None

    def action_noise(self) -> float:
        """Std of the Gaussian noise on continuous actions in the next evaluation round
        (default: ``config.action_noise``; ERL explores with its learner's round only)."""
        return self.config.action_noise

    def wants_transitions(self) -> bool:
        """Whether evaluations return every step's transition (``result.transitions``),
        for an algorithm that learns from the population's experience (default: no)."""
        return False

    @abstractmethod
    def ask(self) -> Population:
        """The population to evaluate next."""

    @abstractmethod
    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        """Learn from the evaluation of ``population``; return scalar stats, logged as
        ``algo/<key>``."""

    @abstractmethod
    def policy_params(self) -> torch.Tensor:
        """The ``(D,)`` float32 CPU parameters to deploy now (ES: the center; GA: the elite)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this algorithm is (tensors, numpy
        arrays, plain values)."""

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
    """Rows for tables of the run's own (``lineage`` -> ``<run dir>/lineage.csv``), each
    with a ``segment`` column (the segment that wrote it, from 1): a resumed run drops the
    rows past its checkpoint, so each row is there once."""


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
    """Where the config's unset fields came from (the preset for this kind of task); the
    start-up line shows it."""
    samplers: Callable[[SamplerRequest], LearnerSampler | None] | None = None
    """The run's scheduler's :meth:`Scheduler.learner_sampler`: where the envs are stepped."""
    envs_per_shard: int = 0
    """``scheduler.envs_per_shard``: shards of the learner's envs (0: none)."""
    member: int | None = None
    """This learner's index in a population of learners, which samples for it (it builds
    no envs of its own); None: it runs alone."""


class Learner(ABC):
    """A gradient-based learner: drives persistent envs and learns from transitions.

    The trainer calls :meth:`train_segment` until a budget is spent; between segments it
    evaluates ``policy_params()`` on full, unclipped episodes, logs, and checkpoints
    ``state_dict()``. ``segments`` counts completed segments, as an algorithm's
    ``generation`` counts its generations (a learner does not count generations).
    """

    config_class: ClassVar[type[LearnerConfig]] = LearnerConfig
    trains_recurrent_cores: ClassVar[bool] = False
    """Whether the learner trains a network with a recurrent core (``net.core``): its
    sampler then keeps a state per env (``SamplerRequest.state_size``) and its policy acts
    from it; a run with a core is refused for a learner that does not say so."""

    def __init__(self, config: LearnerConfig, context: LearnerContext) -> None:
        self.config = config
        self.context = context
        self.segments = 0
        """Completed segments (checkpoints and metrics call it ``segment``)."""
        self.best_params: torch.Tensor | None = None
        """Learners deploy their current policy; they keep no best member."""
        self.notices: list[str] = []
        """Lines for the user (e.g. "the replay buffer restarts empty"): after each call into
        the learner the trainer sends them to the run's loggers and empties the list."""

    @abstractmethod
    def train_segment(self) -> Segment:
        """Sample and learn for one segment (``config.segment_steps`` env steps); then
        ``segments`` grows by one."""

    @abstractmethod
    def policy_params(self) -> torch.Tensor:
        """The ``(D,)`` float32 CPU policy to deploy, in the network's flat layout (its
        outputs are action logits, or the mean of continuous actions before squashing)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue from the end of the last segment."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict`."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release envs and threads (called once, when the run ends; default: nothing)."""

    def describe(self) -> str:
        """What the start-up line says of how this learner computes, beyond its settings
        (a reduced-precision encoder); default: nothing."""
        return ""


class Backend(ABC):
    """Runs the forward pass of many different members of one network at once."""

    config_class: ClassVar[type[BackendConfig]] = BackendConfig

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
        """How a population of ``population_size`` dense members will run, when the user
        should know (a slower path, say), for the start-up line; "" when there is nothing
        to say."""
        return ""

    @abstractmethod
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)`` of member ``members[j]`` on ``observations[j]``.

        Only the listed members are computed: callers pass the members whose episodes
        are still alive.
        """

    @property
    def batch_invariant(self) -> bool:
        """Whether, for the population last loaded, a member's outputs are the same bits
        whatever else shares its :meth:`forward` call, by construction (so every scheduler
        gives the same results, ``docs/reproducibility.md``). Where false, they agree to
        rounding across companies and are the same bits for the same calls.
        :func:`neuroplug.testing.check_backend_contract` checks whichever is claimed."""
        return True

    runs_virtual_batch_norm: ClassVar[bool] = False
    """Whether :meth:`load` runs networks with virtual batch norm (``net.vbn``): it then
    runs every member as :meth:`Network.deploy <neuroplug.nets.network.Network.deploy>`
    makes it, its reference statistics folded in; such a network on a backend without it
    is refused."""

    runs_recurrent_cores: ClassVar[bool] = False
    """Whether :meth:`forward_with_state` runs networks with a recurrent core
    (``net.core``); a run of such a network on a backend without it is refused."""

    def forward_with_state(
        self, members: torch.Tensor, observations: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`forward` for a network with a recurrent core: row j goes on from its
        episode's state ``state[j]`` (``(n, H)``, zeros at the episode's start, on
        :attr:`device`); returns the outputs and the new states. A backend that sets
        :attr:`runs_recurrent_cores` implements it."""
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
    """Envs that act as one (a population member's); groups and shards hold whole units
    or divide one."""
    run_seed: int
    state_size: int = 0
    """A recurrent policy's core width (``net.core``): the sampler keeps a state per env."""


class LearnerSampler(Protocol):
    """Where a learner's envs are stepped: the local :class:`neuroplug.rl.sampler.Sampler`,
    shards of them (:class:`neuroplug.rl.shards.ShardedSampler`), or what a scheduler's
    :meth:`Scheduler.learner_sampler` returns (Ray actors). The envs live for the whole
    run; a rollout ends with every env's next observation pending. A sampler that can
    sample asynchronously (for ``algo=appo``) also sets ``asynchronous = True`` and offers
    ``rollout_as_ready(acting, version, length)``: the rollouts of the shards that come
    back first, acted with the newest weights each had."""

    num_envs: int
    """The learner's envs (a population's: every member's)."""
    env_steps: int
    """Valid env steps sampled so far (EnvPool's auto-reset steps are not counted)."""
    forward_passes: int
    """Observations that went through the policy so far."""
    timings: dict[str, float]
    """Seconds per phase (``env``, ``inference``, ``env_setup``); the engine zeroes them
    per segment."""

    @property
    def started(self) -> bool:
        """Whether the envs are built."""

    def start(self, seeds: np.ndarray) -> None:
        """Build the envs, one seed each, and reset them: every env starts a new episode."""

    def start_segment(self, segment: int) -> None:
        """Seed the action draws of ``segment``."""

    def rollout(self, acting: Acting, length: int) -> Rollout:
        """``length`` steps of every env, the actions chosen by ``acting``
        (:meth:`neuroplug.rl.acting.Acting.act`, refreshed by the caller)."""

    def take_episodes(self) -> Episodes:
        """The games completed since the last call (true scores, lengths, their envs)."""

    def close(self) -> None:
        """Close the envs."""


class Scheduler(ABC):
    """Plays the episodes of a population: env stepping plus batched inference; for a
    learner, where its envs are stepped (:meth:`learner_sampler`)."""

    config_class: ClassVar[type[SchedulerConfig]] = SchedulerConfig

    def __init__(self, config: SchedulerConfig, env: EnvSpec) -> None:
        self.config = config
        self.env = env

    def learner_sampler(self, request: SamplerRequest) -> LearnerSampler | None:
        """A sampler that steps a learner's envs somewhere else (Ray actors: a
        :class:`neuroplug.rl.shards.ShardedSampler`), or None (the default): the
        learner steps them in this process, in shards of ``envs_per_shard`` if set."""
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
