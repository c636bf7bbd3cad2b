"""The child-process runner the ViZDoom tests use (tests/support/child_process.py): a
failure in the child fails the test, a native crash is started again once and fails the
test when it repeats, and nothing the child started outlives it or holds its end up."""

from __future__ import annotations

import os
import signal
import subprocess
import time
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


def _leaves_a_process_running(marker: str) -> None:
    # As a crashed Doom engine's parent leaves its engines: alive, holding the output.
    Path(marker).write_text(str(subprocess.Popen(["sleep", "300"]).pid))


def _runs_forever() -> None:
    time.sleep(300)


def _is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a zombie has ended, only its parent has not asked


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


def test_what_the_child_left_running_neither_holds_the_test_nor_outlives_it(tmp_path):
    marker = tmp_path / "pid"
    # Reading the child's output through pipes waited for the sleep: past this timeout.
    run_in_child(_leaves_a_process_running, str(marker), timeout=60)
    assert not _is_running(int(marker.read_text()))


def test_a_child_past_its_timeout_is_stopped_and_fails_the_test():
    with pytest.raises(pytest.fail.Exception, match="_runs_forever ran past 2 s"):
        run_in_child(_runs_forever, timeout=2)
