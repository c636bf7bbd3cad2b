"""Check that a run resumed from its checkpoint ends exactly where an uninterrupted one does
(:func:`check_resume_is_exact`, for evolution), or for a learner, whose envs cannot be saved
mid-episode, that it continues everything else exactly (:func:`check_learner_resume`).

    from neuroplug.testing import check_resume_is_exact, compose

    def test_resume(tmp_path):                      # compose: overrides -> the composed config
        check_resume_is_exact(compose, ["algo=myalgo", "env=cartpole"], tmp_path)

Runs ``generations`` generations straight, and ``stop_at`` generations followed by
``run.resume`` up to ``generations``, through the same code path as the command line
(:func:`neuroplug.app.run_job`), then compares the two final checkpoints and deployable
policies bit for bit: the algorithm state (including its RNG), counters, observation
normalizer, last evaluation and the parameters in ``best_policy.pt``.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neuroplug.app import run_job
from neuroplug.experiment.typed import typed_experiment
from neuroplug.rl.rollout_loop import NEW_EPISODES
from neuroplug.training.checkpoint import BEST_POLICY, checkpoint_dir, load_checkpoint, load_data
from neuroplug.training.components import build_components

QUIET = ["logger=none", "run.stop_when_solved=false"]


def same(left: Any, right: Any) -> bool:
    """Deep equality for nested dicts/lists of tensors, arrays and plain values."""
    if isinstance(left, dict):
        return (
            isinstance(right, dict)
            and left.keys() == right.keys()
            and all(same(left[k], right[k]) for k in left)
        )
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, torch.Tensor):
        return isinstance(right, torch.Tensor) and torch.equal(left, right)
    if isinstance(left, np.ndarray):
        return np.array_equal(left, right)
    return left == right


def check_resume_is_exact(
    compose: Callable[[list[str]], Any],
    overrides: list[str],
    workdir: Path,
    generations: int = 4,
    stop_at: int = 2,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Assert exact resumption; returns (uninterrupted, resumed) checkpoint states."""
    common = [*QUIET, *overrides]
    straight, resumed = Path(workdir) / "straight", Path(workdir) / "resumed"
    run_job(compose([*common, f"run.max_generations={generations}", f"run.output_dir={straight}"]))
    run_job(compose([*common, f"run.max_generations={stop_at}", f"run.output_dir={resumed}"]))
    assert load_checkpoint(resumed)["generation"] == stop_at
    summary = run_job(
        compose([*common, f"run.max_generations={generations}", f"run.resume={resumed}"])
    )
    assert summary["generation"] == generations
    left, right = load_checkpoint(straight), load_checkpoint(resumed)
    for key in (
        "generation",
        "counters",
        "last_eval",
        "algorithm",
        "normalizer",
        "reference_batch",
        "loop",
    ):
        assert same(left.get(key), right.get(key)), f"{key} differs after resuming"
    policies = [load_data(checkpoint_dir(run) / BEST_POLICY) for run in (straight, resumed)]
    for key in ("policy_params", "best_member_params"):
        assert same(policies[0][key], policies[1][key]), (
            f"best_policy.pt {key} differs after resuming"
        )
    return left, right


def check_learner_resume(
    compose: Callable[[list[str]], Any],
    overrides: list[str],
    workdir: Path,
    segments: int = 3,
    stop_at: int = 1,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Assert what resuming a learner keeps; returns the checkpoints of two resumed copies.

    Runs ``stop_at`` segments, then resumes two copies of that run dir up to ``segments``
    and asserts that: the checkpointed state loads back into a new learner unchanged
    (weights, optimizer, RNG-stream positions, counters); the resumed run says once that its
    envs start new episodes; its counters continue from the checkpoint's; and the two
    copies end in the same state (a resumed run is reproducible from its checkpoint).
    """
    common = [*QUIET, *overrides]
    first, second = Path(workdir) / "first", Path(workdir) / "second"
    run_job(compose([*common, f"run.max_segments={stop_at}", f"run.output_dir={first}"]))
    saved = load_checkpoint(first)
    assert saved["segment"] == stop_at
    composed = compose([*common, f"run.output_dir={first}"])
    learner = build_components(typed_experiment(composed)).algorithm
    learner.load_state_dict(saved["algorithm"])
    assert same(learner.state_dict(), saved["algorithm"]), "the learner's state changed on loading"
    learner.close()
    shutil.copytree(first, second)
    ended = []
    for run in (first, second):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            resumed = [*common, "logger=console", f"run.max_segments={segments}"]
            summary = run_job(compose([*resumed, f"run.resume={run}"]))
        assert summary["segment"] == segments
        assert printed.getvalue().count(NEW_EPISODES) == 1, printed.getvalue()
        ended.append(load_checkpoint(run))
    left, right = ended
    for name in ("env_steps", "frames", "forward_passes"):
        assert left["counters"][name] > saved["counters"][name], f"counter {name} restarted"
    for key in ("segment", "counters", "last_eval", "algorithm"):
        assert same(left[key], right[key]), f"{key} differs between two resumes of one checkpoint"
    return left, right
