"""The engine's old import path (``neuroplug.schedulers``) still works, and says where it went."""

from __future__ import annotations

import importlib
import sys

import pytest

import neuroplug.engine.lockstep as lockstep


def test_the_old_path_warns_and_gives_the_same_engine():
    for name in ("neuroplug.schedulers.lockstep", "neuroplug.schedulers"):
        sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match="neuroplug.engine"):
        old = importlib.import_module("neuroplug.schedulers")
    assert old.LockstepScheduler is lockstep.LockstepScheduler
    assert importlib.import_module("neuroplug.schedulers.lockstep") is lockstep
