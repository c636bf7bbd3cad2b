"""Every contract a plugin honours, in one file.

A generation flows through three plugin kinds::

    population = algorithm.ask()                                   # Algorithm
    backend.load(population)                                       # Backend
    result = scheduler.evaluate(population, policy, backend, request)  # Scheduler
    algorithm.tell(population, result)

Each kind is an entry-point group (``neuroplug.algorithms``, ``neuroplug.backends``,
``neuroplug.schedulers``); the entry point names a class that subclasses the matching base
below and sets ``config_class`` to a dataclass deriving from the matching config base. The
dataclass is the plugin's Hydra schema: neuroplug stores it in Hydra's ConfigStore under
the plugin's group (``algo``, ``backend``, ``scheduler``), so ``algo=<name>`` works as soon
as the package is installed. Validate values in ``__post_init__`` and raise
:class:`neuroplug.errors.ConfigError` naming the field.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from neuroplug.errors import require

if TYPE_CHECKING:
    import torch

    from neuroplug.envs.spec import EnvSpec
    from neuroplug.nets.network import Network
    from neuroplug.nets.policy import Policy
    from neuroplug.population import Population


# --------------------------------------------------------------------------- configs


@dataclass
class PluginConfig:
    """Fields every plugin config has; neuroplug fills ``name`` with the plugin's name."""

    name: str = ""
    """The registered plugin name (set by neuroplug when it stores the schema)."""


@dataclass
class AlgorithmConfig(PluginConfig):
    """Base of algorithm configs."""

    population_size: int = 64
    """Members evaluated per generation."""
    episodes_per_member: int = 1
    """Episodes each member plays per generation; its fitness is their mean return."""
    obs_norm: bool = False
    """Normalise vector observations by running mean/std (updated between generations)."""
    action_noise: float = 0.0
    """Std of Gaussian noise added to continuous actions while training."""

    def __post_init__(self) -> None:
        require(
            self.population_size >= 2,
            "algo.population_size",
            f"must be at least 2, got {self.population_size}",
            "an integer >= 2",
        )
        require(
            self.episodes_per_member >= 1,
            "algo.episodes_per_member",
            f"must be at least 1, got {self.episodes_per_member}",
            "an integer >= 1",
        )
        require(
            self.action_noise >= 0,
            "algo.action_noise",
            f"must be non-negative, got {self.action_noise}",
            "a float >= 0",
        )


@dataclass
class BackendConfig(PluginConfig):
    """Base of backend configs."""

    device: str = "auto"
    """``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda`` or ``cuda:N``."""


@dataclass
class SchedulerConfig(PluginConfig):
    """Base of scheduler configs."""

    num_threads: int = 0
    """EnvPool worker threads; 0 means one per CPU core."""

    def __post_init__(self) -> None:
        require(
            self.num_threads >= 0,
            "scheduler.num_threads",
            f"must be >= 0, got {self.num_threads}",
            "0 (one per core) or a positive integer",
        )


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
    """Whether to return sums of observations for the normaliser."""
    round: int = 0
    """Which evaluation round of the generation this is (the GA re-evaluates its best
    candidates in round 1); part of the env seeds so rounds see different episodes."""
    behaviour: str | None = None
    """Which behaviour characterisation to return per episode (None: none); see
    :mod:`neuroplug.behaviours` for the names."""


@dataclass
class ObservationStats:
    """Sums over a batch of observations, to update a running normaliser."""

    total: np.ndarray
    total_squares: np.ndarray
    count: int


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
    behaviours: np.ndarray | None = None
    """``(P, E, d)`` float64 behaviour characterisations, when the request named one."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent per phase (``env``, ``inference``, ...)."""

    @property
    def episodes(self) -> int:
        """Episodes played."""
        return int(self.returns.size)

    @property
    def fitness(self) -> np.ndarray:
        """``(P,)`` mean return of each member over its episodes."""
        return self.returns.mean(axis=1)


# --------------------------------------------------------------------------- plugins


class Algorithm(ABC):
    """Proposes populations and learns from their results (ask/tell).

    A generation is one or more ask/evaluate/tell rounds: most algorithms need one, the
    deep GA a second to re-evaluate its best candidates. ``generation`` counts completed
    generations; the trainer keeps asking until it grows, and checkpoints only between
    generations.
    """

    config_class: ClassVar[type[AlgorithmConfig]] = AlgorithmConfig
    generation: int = 0
    """Completed generations."""

    def __init__(
        self,
        config: AlgorithmConfig,
        initial_params: torch.Tensor,
        seed: int,
        initializer: Callable[[int], torch.Tensor] | None = None,
    ) -> None:
        """``initial_params``: the network initialised from the run seed; ``initializer``
        maps a seed to a fresh ``(D,)`` draw from the network's initialisation
        distribution (for algorithms that sample many, like the GA and random search)."""
        self.config = config

    def bind_network(self, network: Network) -> None:
        """Called once with the run's network before the first :meth:`ask`.

        For algorithms whose populations depend on the architecture (ES with low-rank
        perturbations needs the weight matrices' shapes); the default ignores it.
        """
        return None

    def episodes_per_member(self) -> int:
        """Episodes each member of the next population plays (default: the config's)."""
        return self.config.episodes_per_member

    def behaviour(self) -> str | None:
        """The behaviour characterisation this algorithm needs per episode (default: none)."""
        return None

    @abstractmethod
    def ask(self) -> Population:
        """The population to evaluate next."""

    @abstractmethod
    def tell(self, population: Population, result: EvaluationResult) -> dict[str, float]:
        """Learn from the evaluation of ``population``; return scalar stats to log."""

    @abstractmethod
    def policy_params(self) -> torch.Tensor:
        """The parameters to deploy now (ES: the centre; GA: the elite)."""

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly where this algorithm is."""

    @abstractmethod
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state produced by :meth:`state_dict`."""


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

    @abstractmethod
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)`` of member ``members[j]`` on ``observations[j]``.

        Only the listed members are computed: callers pass the members whose episodes
        are still alive.
        """


class Scheduler(ABC):
    """Plays the episodes of a population: env stepping plus batched inference."""

    config_class: ClassVar[type[SchedulerConfig]] = SchedulerConfig

    def __init__(self, config: SchedulerConfig, env: EnvSpec) -> None:
        self.config = config
        self.env = env

    @abstractmethod
    def evaluate(
        self,
        population: Population,
        policy: Policy,
        backend: Backend,
        request: EvaluationRequest,
    ) -> EvaluationResult:
        """Play ``request.episodes_per_member`` episodes with every member."""
