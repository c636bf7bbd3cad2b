"""Tests of EnvPool families a build may leave out skip there, saying which task is missing.

The GPU machine's EnvPool is slimmed to Atari, classic control and MuJoCo
(``../shared/tools/gpu-site.sh``): no DeepMind Control, ViZDoom or MiniGrid. The full
wheels installed here and in CI hold every family, so these tests run there.
"""

from __future__ import annotations

import functools

import pytest


@functools.cache
def registered_tasks() -> frozenset[str]:
    """Every task id this EnvPool build registers (all families registered first: neuroplug
    registers only the family a run names, and a list taken then would miss the rest)."""
    import importlib

    import envpool

    importlib.import_module("envpool.entry")
    return frozenset(envpool.list_all_envs())


def skip_unless_envpool_has(*task_ids: str) -> None:
    """Skip the calling test when this EnvPool build lacks any of ``task_ids``."""
    missing = [task for task in task_ids if task not in registered_tasks()]
    if missing:
        pytest.skip(f"this EnvPool build has no {', '.join(missing)} (a slimmed build)")
