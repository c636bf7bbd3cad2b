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
actions). The start-up line names the preset that was used.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from neuroplug.envs.spec import EnvSpec
from neuroplug.errors import ConfigError, require

KINDS = ("pixels", "discrete", "continuous")
"""The kinds of task a learner's presets are given for."""

LIFE_AND_CLIP = ("reward_clip", "episodic_life")
"""Settings a preset may turn on only where the env has them (Atari's training settings)."""


def task_kind(env: EnvSpec) -> str:
    """``pixels``, ``discrete`` or ``continuous``: which preset applies to ``env``."""
    if env.is_image:
        return "pixels"
    return "discrete" if env.discrete else "continuous"


def resolve(config: Any, env: EnvSpec) -> tuple[Any, str]:
    """``config`` with its unset (``None``) fields filled for ``env``, by the config's own
    rule (:meth:`~neuroplug.api.LearnerConfig.resolve_presets`); returns it and a
    description for the start-up line."""
    return config.resolve_presets(env, fill_from_presets)


def fill_from_presets(config: Any, env: EnvSpec) -> tuple[Any, str]:
    """``config`` with its unset (``None``) fields taken from its class's preset for
    ``env``'s kind of task; returns it and a description for the start-up line."""
    config.check_task(env)
    for name in LIFE_AND_CLIP:
        require(
            not getattr(config, name) or name in env.learner_settings,
            f"algo.{name}",
            f"is an Atari setting; {env.task_id} is a {env.family} task",
            "false",
        )
    unset = config.unset()
    if not unset:
        return config, "all algo settings given"
    presets = type(config).presets()
    kind = env.family.preset_kind if env.family.preset_kind in presets else task_kind(env)
    preset = presets.get(kind)
    if preset is None:
        # The base class's settings (envs, groups, segment length, ...) have values for
        # every kind; name only the learner's own fields that nothing fills.
        from neuroplug.api import LearnerConfig

        base = LearnerConfig.presets().get(kind)
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
    return dataclasses.replace(config, **values), f"{kind} preset: {preset.source}"
