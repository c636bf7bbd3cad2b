"""Run a test's body in a fresh Python process, for simulators whose native code can crash
the interpreter: a segmentation fault in the pytest process ends the whole run, in a child
it fails one test.

ViZDoom is the one that needs it. EnvPool starts a pool's Doom engines on parallel threads
(one engine process each, reached over shared memory), and that start-up crashed the
interpreter in CI twice (segmentation faults inside ``envpool.make``, 2026-12-01 and -02):
in a fresh clone the engines raced to make ``./_vizdoom/``. neuroplug now makes it first
(``ViZDoom.prepare_pool_start``); the child stays, as simulators' native code is not ours.

The child runs in its own session and everything left in it is killed when it ends: a
crashed child's engine processes outlive it holding its output pipes, and reading those to
their end waited out the whole timeout in CI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
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
        returncode, output = _run(command, timeout)
        if returncode is None:
            pytest.fail(f"{body.__name__} ran past {timeout} s in its child process:\n{output}")
        if returncode >= 0:
            break
        crash = f"{body.__name__} died by {_signal_name(-returncode)} in its child process"
        if start < starts_after_a_crash:
            warnings.warn(
                f"{crash}; started again. Its output ended:\n{output[-2000:]}", stacklevel=2
            )
    if returncode < 0:
        pytest.fail(f"{crash} on each of {starts_after_a_crash + 1} starts:\n{output}")
    if returncode != 0:
        pytest.fail(f"{body.__name__} failed in its child process:\n{output}")


def _run(command: list[str], timeout: float) -> tuple[int | None, str]:
    """The child's exit status (None if it ran past ``timeout``) and its output. The
    output goes to a file, not a pipe, so that nothing the child started can keep the wait
    open; whatever the child left running in its session is killed."""
    with tempfile.TemporaryFile("w+") as output:
        child = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            returncode = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            _kill_session(child)
            child.wait()
        output.seek(0)
        return returncode, output.read()


def _kill_session(child: subprocess.Popen, patience: float = 10) -> None:
    """Kill every process of the child's group (the child too, if it still runs) and wait
    (a while) until they are gone."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        return  # nothing of it is left
    child.wait()  # the child itself, not left a zombie in its group
    deadline = time.monotonic() + patience
    try:
        while time.monotonic() < deadline:
            os.killpg(child.pid, 0)  # raises once no process of the group is left
            time.sleep(0.01)
    except ProcessLookupError:
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
