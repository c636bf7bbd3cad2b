"""The config bases every plugin's schema derives from: part of the contract
(:mod:`neuroplug.api` exports them), kept apart so a config is read, and a bad value
refused, without importing torch.

A plugin's ``config_class`` is a dataclass deriving from the base of its kind; neuroplug
stores it in Hydra's ConfigStore under the plugin's group (``algo``, ``backend``,
``scheduler``), and every field is a setting (``algo.<field>=...``). Give each field a
one-line docstring, and check values in ``check``
(:meth:`neuroplug.config.schema.CheckedConfig.check` says how).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from neuroplug.config.schema import CheckedConfig
from neuroplug.errors import require
from neuroplug.plugin_configs.presets import (
    Mutable,
    Preset,
    PresetFiller,
    base_presets,
    refuse_values_no_task_accepts,
)

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec


@dataclass
class PluginConfig(CheckedConfig):
    """Fields every plugin config has; neuroplug fills ``name`` with the plugin's name."""

    name: str = ""
    """The registered plugin name (set by neuroplug when it stores the schema)."""

    open_fields: ClassVar[tuple[str, ...]] = ()
    """Dict fields that take any key on the command line (``algo.member.learning_rate=...``
    without Hydra's ``+``): their keys are checked by the plugin, not by the schema."""
    hidden_activation: ClassVar[str] = "tanh"
    """An algorithm's MLP hidden activation in its reference implementation, which
    ``net.activation: null`` takes (CleanRL's TD3 and SAC: ``relu``)."""

    initialization: ClassVar[str] = "normc"
    """How an algorithm's reference implementation starts an MLP's linear layers, which
    ``net.init: null`` takes (``sac``: ``uniform``, ``nn.Linear``'s, as CleanRL's script)."""

    def network_activation(self) -> str:
        """The hidden activation ``net.activation: null`` means for this run's algorithm."""
        return self.hidden_activation

    def network_initialization(self) -> str:
        """The initialization ``net.init: null`` means for this run's algorithm."""
        return self.initialization


@dataclass
class AlgorithmConfig(PluginConfig):
    """Base of algorithm configs."""

    population_size: int = 64
    """Members evaluated per generation."""
    episodes_per_member: int = 1
    """Episodes each member plays per generation; its fitness is their mean return."""
    obs_norm: bool = False
    """Normalize vector observations by running mean/std (updated between generations)."""
    action_noise: float = 0.0
    """Std of Gaussian noise added to continuous actions while training."""
    action_temperature: float = 0.0
    """Discrete actions while training: drawn from ``softmax(outputs / temperature)``
    (a text task's tokens sampled), 0 for the argmax. Evaluations of the policy always take
    the argmax."""

    population_from_dimension: ClassVar[bool] = False
    """Whether ``population_size: 0`` means the algorithm's own default from the number of
    parameters (CMA-ES's ``4 + 3 ln D``), resolved when the network is known."""
    virtual_batch_norm_families: ClassVar[tuple[str, ...]] = ()
    """The env families (``atari``) where ``net.vbn: null`` turns virtual batch norm on for
    this algorithm: where its paper used it."""

    def check_task(self, env: EnvSpec) -> None:  # noqa: B027 - optional hook
        """Refuse a task this algorithm cannot run on (raise :class:`ConfigError` naming
        the setting); a run asks at its front door, before torch is imported, so it must
        import nothing heavy. Default: every task."""

    def check(self) -> None:
        super().check()
        require(
            self.population_size >= 2
            or (self.population_size == 0 and self.population_from_dimension),
            "algo.population_size",
            f"must be at least 2, got {self.population_size}",
            "0 (the paper's default for the network's size) or an integer >= 2"
            if self.population_from_dimension
            else "an integer >= 2",
        )
        require(
            self.episodes_per_member >= 1,
            "algo.episodes_per_member",
            f"must be at least 1, got {self.episodes_per_member}",
            "an integer >= 1",
        )
        require(
            self.action_temperature >= 0,
            "algo.action_temperature",
            f"must be non-negative, got {self.action_temperature}",
            "0 (the argmax) or a float > 0",
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

    env_threads: int = 0
    """EnvPool worker threads; 0 means one per CPU core."""
    envs_per_shard: int = 0
    """Learners: the envs in shards of this many, each with its own pool, seeds and action
    stream, so a run's results do not depend on where the shards are stepped (the same
    for any number of Ray workers, and locally with the same shards); 0: no shards (one
    sampler over every env, the local default)."""

    def check(self) -> None:
        super().check()
        require(
            self.env_threads >= 0,
            "scheduler.env_threads",
            f"must be >= 0, got {self.env_threads}",
            "0 (one per core) or a positive integer",
        )
        require(
            self.envs_per_shard >= 0,
            "scheduler.envs_per_shard",
            f"must be >= 0, got {self.envs_per_shard}",
            "0 (no shards) or a positive integer",
        )


@dataclass
class LearnerConfig(PluginConfig):
    """Base of gradient-based learner configs (``algo=ppo``, ...).

    A field left ``None`` takes the reference setting for the run's kind of task
    (``pixels``, ``discrete`` or ``continuous``) from :meth:`presets`; a value given on the
    command line or in a preset file wins. Subclasses extend :meth:`presets` with their own
    fields' values and :meth:`check` with their own checks.
    """

    num_envs: int | None = None
    """Environments stepped side by side for the whole run."""
    env_groups: int | None = None
    """Groups of envs stepped in turn (K >= 2 double-buffers: one group's envs step in
    EnvPool's threads while the policy runs on another's observations)."""
    segment_steps: int | None = None
    """Env steps per segment: a checkpoint, an evaluation opportunity and a log line. The
    envs live for the whole run: a game still running at a segment's end goes on into the
    next segment and is counted, whole, in the segment where it ends."""
    reward_clip: bool | None = None
    """Atari: train on rewards clipped to {-1, 0, 1} (logged returns stay true game scores)."""
    episodic_life: bool | None = None
    """Atari: a lost life ends the learner's episode (the game itself goes on)."""
    device: str = "auto"
    """Where the learner's network trains: ``auto`` (CUDA when present), ``cpu``, ``cuda``."""
    torch_threads: int | None = None
    """PyTorch's CPU threads; 0: auto, one per core while the machine is otherwise idle and
    1 while other processes want the cores, re-checked every segment
    (:class:`neuroplug.runtime.devices.TorchThreads`). 1 is fastest for small MLPs, whose
    operations are too small to share out."""

    @classmethod
    def presets(cls) -> dict[str, Preset]:
        """Reference settings per kind of task (:data:`neuroplug.plugin_configs.presets.KINDS`) for the
        fields left ``None``; a subclass extends its parent's."""
        return base_presets()

    mutable: ClassVar[dict[str, Mutable]] = {}
    """The fields population-based training may change (``algo=pbt``), with their bounds.
    A learner that declares none cannot be a population's member. The learner must read
    them from its config each time it uses them, so a change takes effect at once."""

    def resolve_presets(self, env: EnvSpec, fill: PresetFiller) -> tuple[LearnerConfig, str]:
        """This config with its unset fields filled for ``env``, and where the values came
        from (for the start-up line). ``fill`` is the standard rule (the preset of
        :meth:`presets` for the task's kind:
        :func:`neuroplug.plugin_configs.presets.fill_from_presets`); a config holding another
        learner's settings (``algo=pbt``) applies it to those too."""
        return fill(self, env)

    def memory_bytes(self, env: EnvSpec) -> int:
        """Host memory the learner holds besides its network, in bytes (a replay buffer),
        so a population can say before it starts whether it fits. Default: 0."""
        return 0

    def check_task(self, env: EnvSpec) -> None:  # noqa: B027 - optional hook
        """Refuse a task this learner cannot train on (raise :class:`ConfigError` naming
        ``algo``); called before the preset is chosen. Default: every task."""

    def unset(self) -> list[str]:
        """The fields still ``None``: the preset for the run's task fills them."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is None]

    def __post_init__(self) -> None:
        # Checked once every field has its value: on the command line's config only when it
        # set everything, else after the preset filled the rest (still before any env).
        unset = self.unset()
        if not unset:
            self.check()
        else:
            refuse_values_no_task_accepts(self, unset)

    def check(self) -> None:
        """The settings every learner has; called once all are set (see ``__post_init__``)."""
        super().check()
        require(self.num_envs >= 1, "algo.num_envs", f"got {self.num_envs}", "an integer >= 1")
        require(
            1 <= self.env_groups <= self.num_envs,
            "algo.env_groups",
            f"got {self.env_groups} for algo.num_envs={self.num_envs}",
            "an integer in [1, algo.num_envs]",
        )
        require(
            self.torch_threads >= 0,
            "algo.torch_threads",
            f"got {self.torch_threads}",
            "0 (auto) or a positive integer",
        )
        require(
            self.segment_steps >= 1,
            "algo.segment_steps",
            f"got {self.segment_steps}",
            "an integer >= 1",
        )
