"""The contract every learner plugin honours, checked on a small real task.

Use it from a plugin's own tests::

    from neuroplug.testing import check_learner_contract

    def test_my_learner_honours_the_contract():
        check_learner_contract(MyLearner)

The learner trains a few short segments on CartPole-v1 (EnvPool, a 16-unit MLP, CPU), so
the check runs in seconds; a learner for another kind of task names one with ``task``
(``check_learner_contract(MySAC, task="Pendulum-v1")``: an EnvPool task id, or an
:class:`~neuroplug.config.schema.EnvConfig`, a gymnasium env's say). It checks: each ``train_segment`` advances ``segments`` by one
and returns honest counters (``frames = env_steps * frame_skip``, at least the segment's
steps, finite returns of whole games with positive lengths, scalar stats);
``policy_params()`` is a finite ``(D,)`` float32 CPU tensor that changes with training; a
run stops at the budget it is given (``max_env_steps``) rather than a segment past it; a
fixed seed gives identical runs; and a checkpoint (``state_dict`` through ``torch.save``
and back through the weights-only loader resuming uses) loads into a new learner
unchanged.

Arguments: ``config`` (default: the plugin's ``config_class(name=...)``, its unset fields
filled from its preset for the task), ``task`` (default CartPole-v1), ``segments`` trained, ``segment_steps`` per segment,
the ``seed``, ``deterministic=False`` for an asynchronous learner whose runs depend
on thread timing (``appo``), and ``network``: the policy network to train, built from
the env's spec (default: a 16-unit MLP), so a new architecture can be checked under
every learner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from neuroplug.api import Learner, LearnerConfig, LearnerContext
from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.spec import EnvSpec
from neuroplug.nets.network import Network
from neuroplug.plugin_configs.presets import resolve
from neuroplug.testing.algorithm_contract import ContractViolation, roundtrip
from neuroplug.testing.resume_check import same
from neuroplug.training.components import build_env_and_network
from neuroplug.training.components import learner_context as _learner_context

TASK = "CartPole-v1"


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ContractViolation(message)


NetworkFactory = Callable[[EnvSpec], Network]
"""Builds the policy network for an env spec."""


Task = str | EnvConfig
"""An EnvPool task id, or a whole env config (a gymnasium env's)."""


def learner_context(
    seed: int = 0,
    max_env_steps: int | None = None,
    network: NetworkFactory | None = None,
    task: Task = TASK,
) -> LearnerContext:
    """What a learner is built from, for ``task`` (CartPole-v1) with a 16-unit MLP (or
    ``network``)."""
    env_config = task if isinstance(task, EnvConfig) else EnvConfig(task_id=task)
    env, default = build_env_and_network(env_config, NetConfig(hidden_sizes=[16]))
    policy = network(env) if network is not None else default
    return _learner_context(policy, env, seed, max_env_steps, env_threads=1)


def _build(
    learner_class: type[Learner],
    config: LearnerConfig,
    seed: int,
    budget: int | None,
    network: NetworkFactory | None,
    task: Task,
):
    context = learner_context(seed, budget, network, task)
    settings, _ = resolve(config, context.env)
    return learner_class(settings, context)


def check_learner_contract(
    learner_class: type[Learner],
    config: LearnerConfig | None = None,
    segments: int = 2,
    segment_steps: int = 256,
    seed: int = 0,
    deterministic: bool = True,
    network: NetworkFactory | None = None,
    task: Task = TASK,
) -> None:
    """Raise :class:`ContractViolation` naming the first broken part of the contract."""
    name = learner_class.__name__
    config = config or learner_class.config_class(name=name.lower())
    config = dataclasses.replace(config, segment_steps=segment_steps)
    budget = segments * segment_steps
    runs = []
    for _ in range(2):
        learner = _build(learner_class, config, seed, budget, network, task)
        initial = learner.policy_params().clone()
        try:
            steps = 0
            for segment_index in range(segments):
                segment = learner.train_segment()
                _require(
                    learner.segments == segment_index + 1,
                    f"{name}.train_segment() must advance segments by one",
                )
                frame_skip = learner.context.env.frame_skip
                _require(
                    segment.frames == segment.env_steps * frame_skip,
                    f"{name}: a segment's frames must be env_steps * frame_skip",
                )
                returns, lengths = np.asarray(segment.returns), np.asarray(segment.lengths)
                _require(
                    len(returns) == len(lengths)
                    and bool(np.isfinite(returns).all())
                    and bool((lengths > 0).all()),
                    f"{name}: a segment reports whole games: finite returns, positive lengths",
                )
                _require(
                    all(isinstance(value, float | int) for value in segment.stats.values()),
                    f"{name}: segment stats must be plain numbers",
                )
                steps += segment.env_steps
            params = learner.policy_params()
            _require(
                params.dtype == torch.float32
                and params.device.type == "cpu"
                and params.shape == initial.shape
                and bool(torch.isfinite(params).all()),
                f"{name}.policy_params() must be a finite (D,) float32 CPU tensor",
            )
            _require(not torch.equal(params, initial), f"{name} did not change its policy")
            # Auto-reset steps are not counted, so a run ends a little short of its budget,
            # never a segment past it.
            _require(
                budget // 2 <= steps <= budget,
                f"{name} took {steps} env steps for a budget of {budget} ({segments} segments "
                f"of segment_steps={segment_steps}): a segment must end within its budget, so "
                "a rollout must fit in one (pass a larger segment_steps for longer rollouts)",
            )
            state = roundtrip(learner.state_dict(), "the learner's state_dict()")
        finally:
            learner.close()
        fresh = _build(learner_class, config, seed, budget, network, task)
        try:
            fresh.load_state_dict(state)
            _require(
                same(fresh.state_dict(), state),
                f"{name}: a checkpoint must load back unchanged (state_dict/load_state_dict)",
            )
        finally:
            fresh.close()
        runs.append(state)
    if deterministic:
        _require(same(runs[0], runs[1]), f"{name}: the same seed must give the same run on CPU")
