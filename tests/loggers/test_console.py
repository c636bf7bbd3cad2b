"""The console progress display: live on a terminal, plain lines otherwise."""

from __future__ import annotations

import io
import time

from neuroplug.loggers.console import ConsoleLogger

METRICS = {
    "generation": 1,
    "env_steps": 1000,
    "frames": 4000,
    "episodes": 8,
    "return_max": 21.0,
    "return_mean": 3.5,
    "return_median": 2.0,
    "frames_per_second": 1234.0,
    "elapsed": 3.0,
    "eval_return_mean": float("nan"),
}


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_output_is_not_a_terminal():
    stream = io.StringIO()
    logger = ConsoleLogger({"max_generations": 10}, stream)
    logger.log(METRICS)
    logger.close()
    text = stream.getvalue()
    assert "\r" not in text and "\033" not in text
    assert text.startswith("gen    1 | steps     1k | frames     4k | episodes      8")
    assert "ETA 0:00:27" in text  # 1 of 10 generations in 3 s
    assert "eval" not in text  # NaN: not evaluated this generation


def test_live_status_line_on_a_terminal():
    stream = _Terminal()
    logger = ConsoleLogger({"max_frames": 40_000}, stream)
    logger.log(METRICS)
    deadline = time.monotonic() + 10
    while "generation 2 running" not in stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.1)
    logger.close()
    text = stream.getvalue()
    assert "\r\033[Kgeneration 2 running for 0:00:0" in text
    assert "frames 4k | best 21.00" in text
    assert text.endswith("\r\033[K")  # the status line is cleared when the run ends
