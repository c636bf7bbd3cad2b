"""Run a test's body in a fresh Python process, for simulators whose native code can crash
the interpreter: a segmentation fault in the pytest process ends the whole run, in a child
it fails one test.

ViZDoom is the one that needs it. EnvPool starts a pool's Doom engines on parallel threads
(one engine process each, reached over shared memory), and that start-up has crashed the
interpreter once in CI (a segmentation fault inside ``envpool.make``, 2026-12-01) where
hundreds of local runs did not; gym's CI saw the same from ViZDoom (openai/gym#167).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable

import pytest

# The child loads the test module from its file (its name under pytest depends on the
# import mode) with the parent's import path, then calls the function with the arguments.
_CHILD = """
import importlib.util, json, sys
path, name, args, parent_path = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
sys.path[:0] = [entry for entry in parent_path if entry not in sys.path]
spec = importlib.util.spec_from_file_location("_test_module_in_child", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
getattr(module, name)(*args)
"""


def run_in_child(
    body: Callable[..., None], *args: str, starts_after_a_crash: int = 1, timeout: float = 600
) -> None:
    """Call ``body(*args)`` (a module-level function of a test file, string arguments) in a
    new interpreter. An exception there fails the calling test with the child's traceback.
    A child killed by a signal (a native crash) is started again up to
    ``starts_after_a_crash`` times, with a warning naming the signal; a crash every time
    fails the test."""
    path = sys.modules[body.__module__].__file__
    command = [sys.executable, "-c", _CHILD, path, body.__name__, json.dumps(args)]
    command.append(json.dumps(sys.path))
    for start in range(starts_after_a_crash + 1):
        child = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if child.returncode >= 0:
            break
        crash = f"{body.__name__} died by {_signal_name(-child.returncode)} in its child process"
        if start < starts_after_a_crash:
            warnings.warn(
                f"{crash}; started again. Its output ended:\n{child.stderr[-2000:]}", stacklevel=2
            )
    if child.returncode < 0:
        pytest.fail(f"{crash} on each of {starts_after_a_crash + 1} starts:\n{child.stderr}")
    if child.returncode != 0:
        pytest.fail(f"{body.__name__} failed in its child process:\n{child.stderr}")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
