"""Learner settings per kind of task: the published reference settings fill what is unset.

A learner's settings differ by kind of task far more than an evolution strategy's: PPO on
Atari frames trains as CleanRL's ``ppo_atari_envpool.py`` does (8 envs x 128 steps, 4
epochs, lr 2.5e-4, clipped rewards, a lost life ending the episode), on CartPole as RL Zoo
does (8 envs x 32 steps, 20 epochs, lr 1e-3, gamma 0.98), on MuJoCo as CleanRL's
``ppo_continuous_action.py`` (one env x 2048 steps, 32 minibatches, lr 3e-4). A learner's
config fields that default to ``None`` mean "the reference setting for this kind of task";
:func:`resolve` fills them from the config class's :meth:`~neuroplug.api.LearnerConfig.presets` before the learner is
built, and anything set on the command line or in an ``+experiment`` preset wins.

The kind of task is read from the env: ``pixels`` (stacked frames), ``discrete`` (vector
observations, discrete actions) or ``continuous`` (vector observations, continuous
actions), or named by the env's family (``doom``: :attr:`neuroplug.envs.family.EnvFamily.
preset_kind`). The start-up line names the preset that was used.

Also here, because they are declared beside a learner's settings and read before torch is
imported: :class:`Preset` (a kind's reference values and their source) and
:class:`Mutable` (a setting population-based training may change, and its bounds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from neuroplug.errors import ConfigError, require
from neuroplug.nets.nature_cnn_geometry import fits_nature_cnn

if TYPE_CHECKING:
    from neuroplug.envs.spec import EnvSpec

KINDS = ("pixels", "discrete", "continuous", "doom")
"""The kinds of task a learner's presets are given for (the first three read from the env,
``doom`` named by its family)."""


@dataclass(frozen=True)
class Preset:
    """A learner's reference settings for one kind of task, and where they come from."""

    source: str
    """Where the values come from (the start-up line names it)."""
    values: dict[str, Any] = field(default_factory=dict)
    """Config field -> value, for the fields left unset (``None``)."""

    def extended(self, source: str, **values: Any) -> Preset:
        """This preset with more (or other) values, from ``source``."""
        return Preset(source, {**self.values, **values})


@dataclass(frozen=True)
class Mutable:
    """A learner setting that population-based training may change, and its bounds."""

    low: float
    """The smallest value allowed."""
    high: float
    """The largest value allowed."""
    log: bool = True
    """Change it by factors (rates, coefficients) and draw initial values log-uniformly;
    False: uniformly."""
    complement: bool = False
    """Change ``1 - value`` instead (a discount: 0.99 -> 0.9867 or 0.9925, never past 1)."""

    def clip(self, value: float) -> float:
        """``value`` held within the bounds."""
        return min(max(value, self.low), self.high)


PresetFiller = Callable[[Any, "EnvSpec"], tuple[Any, str]]
"""A config and an env -> the config with its unset fields filled, and their source."""


def base_presets() -> dict[str, Preset]:
    """The settings every learner has (:class:`neuroplug.api.LearnerConfig`'s), per kind
    of task: envs, groups, segment length, Atari's training settings, torch threads."""
    vector = Preset(
        "vector tasks",
        {
            "num_envs": 8,
            "env_groups": 1,
            "segment_steps": 4096,
            "reward_clip": False,
            "episodic_life": False,
            "torch_threads": 1,
        },
    )
    return {
        "pixels": Preset(
            "Atari",
            {
                "num_envs": 8,
                "env_groups": 2,
                "segment_steps": 16384,
                "reward_clip": True,
                "episodic_life": True,
                "torch_threads": 0,
            },
        ),
        "discrete": vector,
        "continuous": vector,
    }


LIFE_AND_CLIP = ("reward_clip", "episodic_life")
"""Settings a preset may turn on only where the env has them (Atari's training settings)."""


def task_kind(env: EnvSpec) -> str:
    """``pixels``, ``discrete`` or ``continuous``: which preset applies to ``env``. An image
    too small for the Nature CNN (MiniGrid's 7x7 view, read flattened by an MLP) is a
    control task's observation, not frames: its actions' kind decides."""
    if env.is_image and fits_nature_cnn(env.obs_shape):
        return "pixels"
    return "discrete" if env.discrete else "continuous"


def resolve(config: Any, env: EnvSpec) -> tuple[Any, str]:
    """``config`` with its unset (``None``) fields filled for ``env``, by the config's own
    rule (:meth:`~neuroplug.api.LearnerConfig.resolve_presets`); returns it and a
    description for the start-up line."""
    return config.resolve_presets(env, fill_from_presets)


def check_learner_task(config: Any, env: EnvSpec) -> None:
    """Refuse a learner's config for a task it cannot train on: the learner's own
    :meth:`~neuroplug.api.LearnerConfig.check_task` (its kind of actions), and Atari's
    training settings on a task without them. Imports nothing: a run asks at its front
    door, before torch."""
    config.check_task(env)
    for name in LIFE_AND_CLIP:
        require(
            not getattr(config, name, False) or name in env.learner_settings,
            f"algo.{name}",
            f"is an Atari setting; {env.task_id} is a {env.family} task",
            "false",
        )


def fill_from_presets(config: Any, env: EnvSpec) -> tuple[Any, str]:
    """``config`` with its unset (``None``) fields taken from its class's preset for
    ``env``'s kind of task; returns it and a description for the start-up line."""
    check_learner_task(config, env)
    unset = config.unset()
    if not unset:
        return config, "all algo settings given"
    presets = type(config).presets()
    own = env.preset_kind or env.family.preset_kind
    kind = own if own in presets else task_kind(env)
    preset = presets.get(kind)
    if preset is None:
        # The base class's settings (envs, groups, segment length, ...) have values for
        # every kind; name only the learner's own fields that nothing fills.
        base = base_presets().get(kind)
        own = [name for name in unset if base is None or name not in base.values] or unset
        raise ConfigError(
            f"algo.{own[0]}",
            f"is unset and {config.name} has no reference settings for {kind} tasks "
            f"like {env.task_id} ({type(config).__name__}.presets() has no {kind!r} entry)",
            "a value for each of "
            + ", ".join(f"algo.{name}" for name in own)
            + f", or a {kind!r} entry in presets()",
        )
    values = {name: preset.values[name] for name in unset if name in preset.values}
    for name in LIFE_AND_CLIP:
        if name in values and name not in env.learner_settings:
            values[name] = False  # an Atari training setting on a task without lives
    missing = [name for name in unset if name not in values]
    if missing:
        raise ConfigError(
            f"algo.{missing[0]}",
            f"is unset and {config.name}'s {kind} preset ({preset.source}) has no value for it",
            "a value on the command line",
        )
    # Fields the preset covers that the command set: the start-up line says which of the
    # preset's values this run does not use.
    given = [name for name in preset.values if name not in unset and hasattr(config, name)]
    source = f"{kind} preset: {preset.source}"
    if given:
        source += "; given: " + ", ".join(f"{name}={getattr(config, name)}" for name in given)
    return dataclasses.replace(config, **values), source


def refuse_values_no_task_accepts(config: Any, unset: list[str]) -> None:
    """Refuse a given value (``algo.learning_rate=-1``) that fails the config's check under
    every kind of task's preset, before the run's env is known (so before torch or an env
    is imported); a value that only some tasks refuse is checked once the preset is
    chosen. ``unset``: the config's fields still ``None``."""
    refusals = []
    for preset in config.presets().values():
        if not set(unset) <= set(preset.values):
            continue  # a preset that leaves fields unset is filled by a subclass's
        try:
            dataclasses.replace(config, **{name: preset.values[name] for name in unset})
        except ConfigError as error:
            refusals.append(error)
        else:
            return
    given = [error for error in refusals if error.field.removeprefix("algo.") not in unset]
    if given and len(given) == len(refusals):
        raise given[0]
