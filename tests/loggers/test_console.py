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
    logger = ConsoleLogger({"max_units": 10}, stream)
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


PROGRESS = {"phase": "generation", "generation": 2, "episodes_done": 37, "episodes_total": 64}


def test_the_status_shows_the_running_generations_episodes_and_frames():
    logger = ConsoleLogger({"max_frames": 40_000}, io.StringIO(), live=False)
    logger.log(METRICS)
    logger.progress({**PROGRESS, "frames": 5500})
    status = logger._status()
    assert status.startswith("generation 2 running for 0:00:0")
    assert "episodes 37/64 | frames 5.5k | best 21.00" in status
    evaluation = {**PROGRESS, "phase": "evaluation", "episodes_done": 3, "episodes_total": 10}
    logger.progress(
        {**evaluation, "eval_frames": 12_000, "eval_frames_per_second": 3000.0, "eval_seconds": 4.0}
    )
    assert logger._status().startswith(
        "evaluating the policy | episodes 3/10 | frames 12k | 3k frames/s | running for 0:00:04"
    )
    logger.log({**METRICS, "generation": 2})  # a finished generation clears its progress
    assert "episodes" not in logger._status()


def test_in_a_pipe_progress_lines_come_at_most_every_interval():
    stream = io.StringIO()
    logger = ConsoleLogger({"max_units": 10}, stream)
    logger.log(METRICS)
    logger.progress({**PROGRESS, "frames": 5500})  # right after a line: nothing
    assert stream.getvalue().count("\n") == 1
    logger.PLAIN_INTERVAL_S = 0.0  # as if the interval had passed
    logger.progress({**PROGRESS, "frames": 5500})
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and "episodes 37/64 | frames 5.5k" in lines[1]
    assert "\r" not in stream.getvalue()


SEGMENT = {
    "phase": "segment",
    "segment": 3,
    "env_steps": 5120,
    "segment_steps": 16384,
    "frames": 2_000_000,
    "frames_per_second": 2500.0,
    "episodes_done": 4,
    "recent_return": -20.25,
}


def test_a_learner_says_segment_and_shows_its_steps_speed_and_games():
    stream = io.StringIO()
    logger = ConsoleLogger({"max_frames": 10_000_000}, stream, live=False, unit="segment")
    metrics = {key: value for key, value in METRICS.items() if key != "generation"}
    logger.log({**metrics, "segment": 2})
    assert stream.getvalue().startswith("seg    2 | steps")
    logger.progress(SEGMENT)
    status = logger._status()
    assert status.startswith("segment 3 running for 0:00:0")
    assert "steps 5.12k/16.4k | 2.5k frames/s | games 4 (recent mean -20.25) | frames 2M" in status
    logger.progress({**SEGMENT, "episodes_done": 0, "recent_return": float("nan")})
    assert "games 0 | frames" in logger._status()


def test_a_unit_in_which_no_episode_ended_shows_dashes_not_nan():
    stream = io.StringIO()
    logger = ConsoleLogger({"max_frames": 10_000_000}, stream, live=False, unit="segment")
    metrics = {key: value for key, value in METRICS.items() if key != "generation"}
    nothing = dict.fromkeys(("return_max", "return_mean", "return_median"), float("nan"))
    logger.log({**metrics, **nothing, "segment": 2})
    line = stream.getvalue()
    assert "| return best        - mean        - median        - |" in line
    assert "nan" not in line
    assert "| best - |" in logger._status()
