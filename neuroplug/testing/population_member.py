"""What a learner needs to be a population's member (``algo=pbt algo.learner=<yours>``).

Use it from a plugin's own tests::

    from neuroplug.testing import check_population_member

    def test_my_learner_can_be_a_population_member():
        check_population_member(MyLearner)

It checks the declarations population-based training reads, then trains a population of
two members on CartPole-v1 (or ``task``: ``"Pendulum-v1"`` for a continuous-action
learner; a 16-unit MLP, CPU) through the very machinery ``algo=pbt``
uses (:class:`neuroplug.rl.learner_population.LearnerPopulation`: one sampler, the members'
acting in one forward, their updates one by one or stacked). It checks: the config
declares at least one mutable setting, each a field of the config whose value lies within
its bounds (and above 0 where it changes by factors from a log-uniform start); the learner
says how it learns from one rollout (``learn_rollout``); each member's policy changes and
the two members differ (their own seeds and updates); training goes on after a mutable
setting of one member changes; and the population's checkpoint loads back unchanged.
"""

from __future__ import annotations

import dataclasses

import torch

from neuroplug.api import LearnerConfig
from neuroplug.plugin_configs.presets import resolve
from neuroplug.rl.base import SegmentLearner
from neuroplug.rl.learner_population import LearnerPopulation
from neuroplug.testing.algorithm_contract import ContractViolation, roundtrip
from neuroplug.testing.learner_contract import TASK, Task, learner_context
from neuroplug.testing.resume_check import same


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


def check_population_member(
    learner_class: type,
    config: LearnerConfig | None = None,
    segment_steps: int = 256,
    task: Task = TASK,
) -> None:
    """Raise :class:`ContractViolation` naming the first thing that keeps ``learner_class``
    from being a population's member."""
    name = learner_class.__name__
    config = config or learner_class.config_class(name=name.lower())
    declared = type(config).mutable
    _require(bool(declared), f"{type(config).__name__}.mutable declares no mutable setting")
    fields = {field.name for field in dataclasses.fields(config)}
    context = learner_context(seed=0, max_env_steps=8 * segment_steps, task=task)
    settings, _ = resolve(dataclasses.replace(config, segment_steps=segment_steps), context.env)
    for setting, bounds in declared.items():
        _require(setting in fields, f"{name}: mutable {setting!r} is not a config field")
        value = getattr(settings, setting)
        _require(
            isinstance(value, int | float) and bounds.low <= value <= bounds.high,
            f"{name}: {setting}={value!r} lies outside its declared bounds "
            f"[{bounds.low}, {bounds.high}]",
        )
        _require(
            bounds.low <= bounds.high and (bounds.high > 0 or not bounds.log),
            f"{name}: {setting}'s bounds cannot be changed by factors",
        )
    _require(
        "learn_rollout" in _overridden(learner_class),
        f"{name} does not say how it learns from one rollout (learn_rollout)",
    )
    population = LearnerPopulation(settings, context, learner_class, [settings] * 2)
    try:
        initial = [member.policy_params().clone() for member in population.members]
        population.train_segment()
        trained = [member.policy_params() for member in population.members]
        for index, (before, after) in enumerate(zip(initial, trained, strict=True)):
            _require(not torch.equal(before, after), f"{name}: member {index} did not learn")
        _require(not torch.equal(*trained), f"{name}: the two members trained alike")
        setting, bounds = next(iter(declared.items()))
        value = getattr(population.members[1].config, setting)
        setattr(population.members[1].config, setting, bounds.clip(value * 1.5))
        population.train_segment()
        state = roundtrip(population.state_dict(), "the population's state_dict()")
    finally:
        population.close()
    fresh = LearnerPopulation(settings, context, learner_class, [settings] * 2)
    try:
        fresh.load_state_dict(state)
        _require(
            same(fresh.state_dict(), state),
            f"{name}: a population's checkpoint must load back unchanged",
        )
    finally:
        fresh.close()


def _overridden(learner_class: type) -> set[str]:
    """The methods ``learner_class`` defines below ``SegmentLearner``."""
    names: set[str] = set()
    for klass in learner_class.__mro__:
        if klass is SegmentLearner:
            break
        names.update(vars(klass))
    return names
