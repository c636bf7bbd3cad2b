"""The child-process runner the ViZDoom tests use (tests/support/child_process.py): a
failure in the child fails the test, a native crash is started again once and fails the
test when it repeats."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from child_process import run_in_child


def _passes(marker: str) -> None:
    Path(marker).write_text(str(os.getpid()))


def _fails_an_assertion() -> None:
    assert 1 + 1 == 3, "the child's own message"


def _crashes() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def _crashes_on_the_first_start(marker: str) -> None:
    if not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGSEGV)


def test_the_body_runs_in_another_process(tmp_path):
    marker = tmp_path / "pid"
    run_in_child(_passes, str(marker))
    assert int(marker.read_text()) != os.getpid()


def test_a_failing_child_fails_the_test_with_its_traceback():
    with pytest.raises(pytest.fail.Exception, match="(?s)AssertionError: the child's own message"):
        run_in_child(_fails_an_assertion)


def test_a_crash_every_start_fails_naming_the_signal():
    with pytest.raises(pytest.fail.Exception, match="died by SIGSEGV .* on each of 2 starts"):
        with pytest.warns(UserWarning, match="started again"):
            run_in_child(_crashes)


def test_a_single_crash_is_started_again_with_a_warning(tmp_path):
    with pytest.warns(UserWarning, match="_crashes_on_the_first_start died by SIGSEGV"):
        run_in_child(_crashes_on_the_first_start, str(tmp_path / "crashed once"))
