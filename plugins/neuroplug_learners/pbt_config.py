"""The settings of ``algo=pbt`` (population-based training): its config schema, beside
:mod:`neuroplug_learners.pbt`, with how a population's settings are resolved from its
members' learner (:meth:`PBTConfig.resolve_presets`, which loads that learner only when a
run is built).

A module of its own that imports no torch: the command line checks a value and prints
``--help`` from it alone, named by the ``neuroplug.learner_configs`` entry point ``pbt``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from neuroplug import registry
from neuroplug.api import LearnerConfig
from neuroplug.config.typed import to_dataclass
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, PluginError, require
from neuroplug.plugin_configs.presets import PresetFiller

MEMBER_LEVEL = ("num_envs", "reward_clip", "episodic_life")
"""Settings of each member, given as ``algo.member.<field>``; the population's own are
derived from them (its envs are the members' times K). ``algo.segment_steps`` may be given
for the whole population (each member's is a K-th of it) or as ``algo.member.segment_steps``."""


INTERVALS = {"pixels": (5_000_000, 20_000_000)}
"""(interval_frames, start_frames) by kind of task: Sample Factory's on Atari; vector tasks,
which learn in 10^5 frames, take :data:`VECTOR_INTERVAL`."""


VECTOR_INTERVAL = (20_000, 0)


@dataclass
class PBTConfig(LearnerConfig):
    """Population-based training (Jaderberg et al. 2017) with Sample Factory's rules, over
    any learner (:mod:`neuroplug_learners.pbt` has the pseudocode). Each member's own
    settings are ``algo.member.<field>`` (the learner's fields, unset ones from its preset
    for the task): ``algo=pbt algo.learner=ppo algo.members=8
    algo.member.learning_rate=3e-4``."""

    open_fields: ClassVar[tuple[str, ...]] = ("member", "initial", "per_member")

    learner: str = "ppo"
    """The members' learner (any installed learner that declares mutable settings)."""
    members: int = 8
    """K: learners in the population."""
    member: dict[str, Any] = field(default_factory=dict)
    """The settings every member starts from: the learner's own fields
    (``algo.member.learning_rate=3e-4``)."""
    initial: dict[str, Any] = field(default_factory=dict)
    """Per-member initial ranges of mutable settings, ``[low, high]``: drawn
    log-uniformly for rates (uniformly where the learner says so); the reference member
    keeps ``member``'s value (``algo.initial.learning_rate=[1e-4,1e-2]``)."""
    per_member: dict[str, Any] = field(default_factory=dict)
    """Explicit initial values of mutable settings, one per member
    (``algo.per_member.learning_rate=[1e-3,1e-6,1e-6,1e-6]``); wins over ``initial``."""
    interval_frames: int | None = None
    """Frames each member plays between exploit-and-explore rounds (Sample Factory's
    ``pbt_period_env_steps``); unset: 5M on Atari, 20k on vector tasks."""
    start_frames: int | None = None
    """No round before each member has played this many frames (``pbt_start_mutation``);
    unset: 20M on Atari, 0 on vector tasks."""
    quantile: float = 0.3
    """The bottom and top fractions of members (``pbt_replace_fraction``)."""
    margin: float = 0.1
    """A bottom member copies a top one only when the top one's objective is higher by more
    than this fraction of the bottom one's (``pbt_replace_reward_gap``)..."""
    margin_absolute: float = 1e-6
    """...and by more than this (``pbt_replace_reward_gap_absolute``)."""
    mutation_probability: float = 0.15
    """Chance that each mutable setting changes in a round (``pbt_mutation_rate``)."""
    factor_low: float = 1.1
    """Smallest factor a setting changes by (``pbt_perturb_min``)."""
    factor_high: float = 1.5
    """Largest factor (``pbt_perturb_max``)."""
    mutate: list[str] | None = None
    """The settings that may change; null: every setting the learner declares mutable but
    the discount (Sample Factory mutates gamma only with ``pbt_optimize_gamma``)."""
    reference_member: bool = True
    """Member 0 is never changed (Sample Factory's policy 0): the baseline."""
    exploit: bool = True
    """Bottom members copy top ones; off, members only mutate (an ablation)."""
    objective_games: int = 10
    """A member's objective is the mean true score of its last this many games."""

    def network_activation(self) -> str:
        """The members' learner's hidden activation (``td3``'s ReLU, ``ppo``'s tanh)."""
        return learner_class(self.learner).config_class.hidden_activation

    def network_initialization(self) -> str:
        """The members' learner's initialization (``sac``'s uniform, ``ppo``'s normc)."""
        return learner_class(self.learner).config_class.initialization

    def resolve_presets(self, env: EnvSpec, fill: PresetFiller) -> tuple[PBTConfig, str]:
        """Resolve the members' settings with their learner's preset, check every
        population setting against the learner's declarations, and derive the population's
        own envs and segment from the members'."""
        for name in MEMBER_LEVEL:
            require(
                getattr(self, name) is None,
                f"algo.{name}",
                "is each member's setting under algo=pbt",
                f"algo.member.{name}",
            )
        require(self.members >= 2, "algo.members", f"got {self.members}", "an integer >= 2")
        schema = learner_class(self.learner).config_class
        if self.segment_steps is not None:
            require(
                "segment_steps" not in self.member,
                "algo.segment_steps",
                "is given twice: for the population and as algo.member.segment_steps",
                "one of them",
            )
            require(
                self.segment_steps >= self.members,
                "algo.segment_steps",
                f"got {self.segment_steps} for {self.members} members",
                "at least one step per member",
            )
        member = _resolved_member(self, schema, env, fill)
        mutating = self.check_mutable(schema)
        # Imported here: both modules import torch, which reading this schema does not.
        from neuroplug.plugin_configs.presets import task_kind
        from neuroplug.runtime.devices import refuse_unless_it_fits

        each = member.memory_bytes(env)
        refuse_unless_it_fits(
            "algo.members",
            self.members * each,
            f"{self.members} members of {self.learner}",
            lambda room: (
                f"at most {room // max(each, 1)} algo.members ({each / 2**30:.2f} GiB "
                "each, mostly replay), or a smaller algo.member.buffer_size"
            ),
        )
        interval, start = INTERVALS.get(task_kind(env), VECTOR_INTERVAL)
        resolved = dataclasses.replace(
            self,
            member={f.name: getattr(member, f.name) for f in dataclasses.fields(member)},
            mutate=mutating,
            num_envs=member.num_envs * self.members,
            env_groups=self.env_groups or member.env_groups,
            segment_steps=member.segment_steps * self.members,
            reward_clip=member.reward_clip,
            episodic_life=member.episodic_life,
            torch_threads=_population_threads(self, member),
            device=member.device,
            interval_frames=interval if self.interval_frames is None else self.interval_frames,
            start_frames=start if self.start_frames is None else self.start_frames,
        )
        return resolved, f"{self.members} x {self.learner}"

    def check_mutable(self, schema: type[LearnerConfig]) -> list[str]:
        """The settings that will mutate; every range and value checked against the bounds
        the learner declares."""
        declared = schema.mutable
        require(
            bool(declared),
            "algo.learner",
            f"{self.learner} declares no mutable settings ({schema.__name__}.mutable)",
            "a learner whose config declares mutable settings",
        )
        allowed = ", ".join(declared)
        mutating = (
            [name for name, spec in declared.items() if not spec.complement]
            if self.mutate is None
            else list(self.mutate)
        )
        for name in mutating:
            require(name in declared, "algo.mutate", f"{name!r} cannot mutate", allowed)
        for name, bounds in self.initial.items():
            key = f"algo.initial.{name}"
            require(name in declared, key, "is not a mutable setting", allowed)
            spec = declared[name]
            valid = isinstance(bounds, list | tuple) and len(bounds) == 2
            require(valid, key, f"got {bounds!r}", "[low, high]")
            low, high = (float(bound) for bound in bounds)
            require(
                spec.low <= low <= high <= spec.high and (low > 0 or not spec.log),
                key,
                f"[{low:g}, {high:g}] is outside {name}'s allowed values",
                f"low <= high within [{spec.low:g}, {spec.high:g}]"
                + (", low > 0 (drawn log-uniformly)" if spec.log else ""),
            )
        for name, values in self.per_member.items():
            key = f"algo.per_member.{name}"
            require(name in declared, key, "is not a mutable setting", allowed)
            spec = declared[name]
            valid = isinstance(values, list | tuple) and len(values) == self.members
            require(valid, key, f"got {values!r}", f"a list of algo.members={self.members} values")
            outside = [float(v) for v in values if not spec.low <= float(v) <= spec.high]
            if outside:
                raise ConfigError(
                    key,
                    f"{outside[0]:g} is outside {name}'s allowed values",
                    f"values within [{spec.low:g}, {spec.high:g}]",
                )
        return mutating

    def check(self) -> None:
        super().check()
        require(0 < self.quantile <= 0.5, "algo.quantile", f"got {self.quantile}", "(0, 0.5]")
        for name in ("margin", "margin_absolute"):
            value = getattr(self, name)
            require(value >= 0, f"algo.{name}", f"got {value}", "a float >= 0")
        probability = self.mutation_probability
        require(0 <= probability <= 1, "algo.mutation_probability", f"got {probability}", "[0, 1]")
        require(
            1 <= self.factor_low <= self.factor_high,
            "algo.factor_low",
            f"got [{self.factor_low}, {self.factor_high}]",
            "1 <= algo.factor_low <= algo.factor_high",
        )
        require(
            self.interval_frames >= 1,
            "algo.interval_frames",
            f"got {self.interval_frames}",
            "an integer >= 1",
        )
        require(
            self.start_frames >= 0,
            "algo.start_frames",
            f"got {self.start_frames}",
            "an integer >= 0",
        )
        require(
            self.objective_games >= 1,
            "algo.objective_games",
            f"got {self.objective_games}",
            "an integer >= 1",
        )


def learner_class(name: str) -> type:
    """The members' learner plugin, or one line saying which learners there are."""
    names = sorted(set(registry.discover("learners")) - {"pbt"})
    require(name in names, "algo.learner", f"unknown learner {name!r}", ", ".join(names))
    try:
        return registry.load("learners", name)
    except PluginError as error:
        raise ConfigError("algo.learner", str(error)) from error


def _population_threads(config: PBTConfig, member: LearnerConfig) -> int:
    """PyTorch's threads for the population: as given (``algo.torch_threads`` or
    ``algo.member.torch_threads``), else auto (one per core while the machine is otherwise
    idle, 1 under load): K members' updates stacked into one computation are K times one
    member's work, enough to share out even where one member's is not."""
    if config.torch_threads is not None or "torch_threads" in config.member:
        return member.torch_threads
    return 0


def _resolved_member(
    config: PBTConfig, schema: type[LearnerConfig], env: EnvSpec, fill: PresetFiller
) -> LearnerConfig:
    """The members' settings: ``algo.member`` over the learner's preset for ``env``; an
    error in them names ``algo.member.<field>``."""
    values = dict(config.member)
    values.setdefault("device", config.device)
    if config.segment_steps is not None:
        values["segment_steps"] = config.segment_steps // config.members
    if config.torch_threads is not None:
        values.setdefault("torch_threads", config.torch_threads)
    values["name"] = config.learner
    try:
        member = to_dataclass(schema, values, "algo.member")
        member, _ = fill(member, env)
    except ConfigError as error:
        if error.field.startswith("algo.member."):
            raise
        problem = str(error)[len(error.field) + 2 :]
        raise ConfigError(error.field.replace("algo.", "algo.member.", 1), problem) from error
    return member
