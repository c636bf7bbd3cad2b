"""``algo=pbt``: population-based training of any learner, the population acting as one.

Jaderberg et al. (2017), "Population Based Training of Neural Networks", arXiv:1711.09846,
with Sample Factory's rules (Petrenko et al. 2020, ``sample_factory/pbt/
population_based_training.py``). K members of one learner (``algo.learner``) train side by
side (:mod:`neuroplug.rl.population`: one sampler, one batched forward per step for
all members, each member learning from its own envs). Every ``interval_frames`` frames of
each member, once it has played ``start_frames``::

    objective_k = mean true score of member k's last objective_games games
    top, bottom = the best and the worst ``quantile`` of the members by objective
                  (a member with no game since it started or copied is not ranked)
    for each member k (but the reference member 0, which is never changed):
        if k in bottom:                                                       (exploit)
            j = a random member of top
            if objective_j - objective_k > max(margin * |objective_k|, margin_absolute):
                k copies j's weights, optimizer state and settings; k's recent games clear
        for each mutable setting s, with probability mutation_probability:    (explore)
            f ~ U[factor_low, factor_high];  s <- s * f or s / f, equally likely
            (a discount changes 1 - s instead), held within the learner's bounds

Each change is a row of ``lineage.csv`` in the run dir. The deployed policy is the member
with the best objective.

Where it departs from Sample Factory, and why:

- The whole population acts in one heterogeneous batched forward on one set of envs
  (Sample Factory gives each policy its own share of workers and its own inference); that
  is the point of neuroplug: K learners cost little more sampling than one.
- The members step in lockstep, so all of them are due together: one round ranks everyone
  on the same objectives (Sample Factory checks each policy when its own counter passes).
- The reference member (``reference_member``, on by default as Sample Factory's policy 0)
  is neither mutated nor replaced: a baseline that stays what it was started as.
- Members may start from spread settings (``initial`` ranges, log-uniform for rates, or
  ``per_member`` values); Sample Factory starts them all alike.
- PPO members on an MLP learn as one computation over members
  (:mod:`neuroplug_learners.ppo_population`: their minibatches stacked, one
  batched forward and backward per gradient step, each member's own Adam state and
  settings); other members learn one by one, as they would alone. APPO members learn
  synchronously from each rollout (the population is the unit that waits); DQN members
  read their epsilon once per rollout.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from neuroplug import registry
from neuroplug.api import LearnerConfig, LearnerContext, Mutable, PresetFiller
from neuroplug.config.typed import to_dataclass
from neuroplug.devices import available_memory_bytes
from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, PluginError, require
from neuroplug.rl.population import LearnerPopulation
from neuroplug.rl.presets import task_kind
from neuroplug.seeds import population_rng

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
    """Population-based training settings; each member's own are ``algo.member.<field>``
    (the learner's fields, unset ones from its preset for the task)."""

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
        mutating = self._check_mutable(schema)
        budget = available_memory_bytes()
        needed = self.members * member.memory_bytes(env)
        if budget is not None and needed > budget:
            raise ConfigError(
                "algo.members",
                f"{self.members} members of {self.learner} need {needed / 2**30:.1f} GiB "
                f"({needed / self.members / 2**30:.2f} GiB each, mostly replay) and "
                f"{budget / 2**30:.1f} GiB is available",
                "fewer algo.members or a smaller algo.member.buffer_size",
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

    def _check_mutable(self, schema: type[LearnerConfig]) -> list[str]:
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


class PBT(LearnerPopulation):
    """Population-based training over :class:`~neuroplug.rl.population.LearnerPopulation`."""

    config_class = PBTConfig

    def __init__(self, config: PBTConfig, context: LearnerContext) -> None:
        member_class = learner_class(config.learner)
        schema = member_class.config_class
        base = schema(**config.member)
        self.declared: dict[str, Mutable] = schema.mutable
        self.mutating = list(config.mutate or [])
        self.rng = population_rng(context.seed)
        members = [
            dataclasses.replace(base, **self._initial_settings(config, k))
            for k in range(config.members)
        ]
        super().__init__(config, context, member_class, members, config.objective_games)
        self.frames_at_last_round = 0
        self.rounds = 0
        self.copies = 0
        self.lineage: list[dict[str, Any]] = []

    def _initial_settings(self, config: PBTConfig, k: int) -> dict[str, float]:
        """Member ``k``'s starting values of the spread settings."""
        values: dict[str, float] = {}
        if not (config.reference_member and k == 0):
            for name, (low, high) in config.initial.items():
                if self.declared[name].log:
                    values[name] = float(np.exp(self.rng.uniform(np.log(low), np.log(high))))
                else:
                    values[name] = float(self.rng.uniform(low, high))
        for name, per_member in config.per_member.items():
            values[name] = float(per_member[k])
        return values

    # ------------------------------------------------------------------ exploit and explore

    def after_rollout(self) -> None:
        config = self.config
        frames = self.members[0].env_steps * self.context.env.frame_skip
        if frames < config.start_frames:
            return
        if frames - self.frames_at_last_round < config.interval_frames:
            return
        self.frames_at_last_round = frames
        self.rounds += 1
        self.exploit_and_explore(frames)

    def exploit_and_explore(self, frames: int) -> None:
        """One round: bottom members copy top ones, every member but the reference mutates."""
        config = self.config
        objectives = self.objectives()
        # Members without a finished game since they started or copied are not ranked.
        known = np.flatnonzero(~np.isnan(objectives))
        count = max(1, round(len(known) * config.quantile)) if len(known) >= 2 else 0
        order = known[np.argsort(-objectives[known], kind="stable")]
        top, bottom = order[:count], set(order[len(order) - count :].tolist())
        for k, member in enumerate(self.members):
            if config.reference_member and k == 0:
                continue
            before = self.settings(k)
            source = None
            if config.exploit and k in bottom:
                j = int(self.rng.choice(top))
                gap = objectives[j] - objectives[k]
                needed = max(config.margin * abs(objectives[k]), config.margin_absolute)
                if gap > needed:
                    member.load_state_dict(self.members[j].state_dict())
                    member.notices.clear()  # a resume's notices: this is no resume
                    for name, value in self.settings(j).items():
                        setattr(member.config, name, value)
                    self.recent[k].clear()
                    source = j
                    self.copies += 1
            self._explore(member)
            after = self.settings(k)
            if source is not None or after != before:
                row: dict[str, Any] = {
                    "generation": self.generation + 1,
                    "frames": frames,
                    "member": k,
                    "copied_from": "" if source is None else source,
                    "objective": objectives[k],
                    "source_objective": "" if source is None else objectives[source],
                }
                for name in self.mutating:
                    row[f"{name}_old"] = before[name]
                    row[f"{name}_new"] = after[name]
                self.lineage.append(row)

    def _explore(self, member) -> None:
        """Each mutable setting changes with ``mutation_probability`` by a random factor."""
        config = self.config
        for name in self.mutating:
            if self.rng.random() >= config.mutation_probability:
                continue
            spec = self.declared[name]
            factor = self.rng.uniform(config.factor_low, config.factor_high)
            if self.rng.random() < 0.5:
                factor = 1.0 / factor
            value = getattr(member.config, name)
            value = 1.0 - (1.0 - value) * factor if spec.complement else value * factor
            setattr(member.config, name, spec.clip(float(value)))

    def settings(self, k: int) -> dict[str, float]:
        """Member ``k``'s current values of the settings that mutate."""
        return {name: float(getattr(self.members[k].config, name)) for name in self.mutating}

    # ------------------------------------------------------------------ record and state

    def segment_stats(self) -> dict[str, float]:
        stats = super().segment_stats()
        stats["pbt_rounds"] = float(self.rounds)
        stats["pbt_copies"] = float(self.copies)
        for k in range(len(self.members)):
            for name, value in self.settings(k).items():
                stats[f"member{k}/{name}"] = value
        return stats

    def segment_tables(self) -> dict[str, list[dict[str, Any]]]:
        rows, self.lineage = self.lineage, []
        return {"lineage": rows}

    def _state(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "frames_at_last_round": self.frames_at_last_round,
            "rounds": self.rounds,
            "copies": self.copies,
            "settings": [
                {name: getattr(member.config, name) for name in self.declared}
                for member in self.members
            ],
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.frames_at_last_round = int(state["frames_at_last_round"])
        self.rounds = int(state["rounds"])
        self.copies = int(state["copies"])
        for member, settings in zip(self.members, state["settings"], strict=True):
            for name, value in settings.items():
                setattr(member.config, name, value)
