"""Progress on the console: one line per generation, and a live status line on a terminal.

Every generation ends with a permanent line (counters, returns, speed, elapsed, ETA). When
the output is a terminal, a status line below it is redrawn twice a second while the next
generation runs: its number, its finished episodes out of all, the run's frames so far,
how long it has been running, the elapsed time and ETA (and, during an evaluation of the
deployed policy, that phase's episodes), so long Atari generations visibly make progress.
A learner's unit is the segment: its lines say ``seg`` and its status line shows the
segment's env steps out of all, its frames/s, the games finished and their recent mean
return.
When the output is a file or a pipe (CI, ``nohup``, a cluster log) the plain lines are
written, plus a progress line at most every :attr:`ConsoleLogger.PLAIN_INTERVAL_S` seconds
of a long generation.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from typing import Any, TextIO

from neuroplug.loggers.base import Logger

TABLE_ROWS = 4
"""Rows of a table (a text task's sample completions) the console shows."""


def human(count: float) -> str:
    """1234567 -> '1.23M'."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(count) >= size:
            return f"{count / size:.3g}{unit}"
    return f"{count:.0f}"


def clock(seconds: float) -> str:
    """Seconds as H:MM:SS."""
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _episodes(progress: dict[str, Any]) -> str:
    return f"{progress['episodes_done']}/{progress['episodes_total']}"


class ConsoleLogger(Logger):
    """Prints a line per generation or segment to ``stream`` (stdout by default), live on a terminal."""

    REFRESH_S = 0.5
    PLAIN_INTERVAL_S = 30.0
    """Least seconds between two lines in a file or pipe (progress lines are skipped)."""

    def __init__(
        self,
        budget: dict[str, int | None],
        stream: TextIO | None = None,
        live: bool | None = None,
        unit: str = "generation",
    ) -> None:
        self.budget = budget
        self.unit = unit
        """What one logged row is: ``generation`` (evolution) or ``segment`` (learners)."""
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self._lock = threading.Lock()
        self._unit_started = time.monotonic()
        self._last: dict[str, Any] | None = None
        self._progress: dict[str, Any] | None = None
        self._last_line = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.live:
            self._thread = threading.Thread(
                target=self._redraw, name="neuroplug-progress", daemon=True
            )
            self._thread.start()

    def _status(self) -> str:
        seconds = time.monotonic() - self._unit_started
        last, progress = self._last, self._progress
        running = last[self.unit] + 1 if last is not None else 1
        if progress is not None and progress["phase"] == "evaluation":
            head = f"evaluating the policy | episodes {_episodes(progress)}"
            if "eval_frames" in progress:
                head += (
                    f" | frames {human(progress['eval_frames'])} | "
                    f"{human(progress['eval_frames_per_second'])} frames/s | "
                    f"running for {clock(progress['eval_seconds'])}"
                )
        elif progress is not None and progress["phase"] == "segment":
            recent = progress["recent_return"]
            head = (
                f"segment {running} running for {clock(seconds)} | steps "
                f"{human(progress['env_steps'])}/{human(progress['segment_steps'])} | "
                f"{human(progress['frames_per_second'])} frames/s | games {progress['episodes_done']}"
                + (f" (recent mean {recent:.2f})" if math.isfinite(recent) else "")
                + f" | frames {human(progress['frames'])}"
            )
        else:
            head = f"{self.unit} {running} running for {clock(seconds)}"
            if progress is not None:
                head += f" | episodes {_episodes(progress)} | frames {human(progress['frames'])}"
            elif last is not None:
                head += f" | frames {human(last['frames'])}"
        if last is None:
            return head
        eta = self.eta(last)
        return (
            f"{head} | best {_score(last['return_max'])} | elapsed {clock(last['elapsed'] + seconds)}"
            f" | ETA {clock(eta) if eta is not None else '?'}"
        )

    def progress(self, state: dict[str, Any]) -> None:
        self._progress = dict(state)
        if self.live:
            return  # the status line shows it
        if time.monotonic() - self._last_line >= self.PLAIN_INTERVAL_S:
            self._print(self._status())

    def _redraw(self) -> None:
        while not self._stop.wait(self.REFRESH_S):
            with self._lock:
                self.stream.write(f"\r\033[K{self._status()}")
                self.stream.flush()

    def _print(self, line: str) -> None:
        with self._lock:
            if self.live:
                self.stream.write("\r\033[K")
            print(line, file=self.stream, flush=True)
            self._last_line = time.monotonic()

    def eta(self, metrics: dict[str, Any]) -> float | None:
        """Seconds left by whichever budget ends first, from the average pace so far."""
        elapsed = metrics["elapsed"]
        estimates = []
        if self.budget.get("max_units") and metrics[self.unit] > 0:
            done = metrics[self.unit] / self.budget["max_units"]
            estimates.append(elapsed * (1 - done) / max(done, 1e-9))
        if self.budget.get("max_frames") and metrics["frames"] > 0:
            done = metrics["frames"] / self.budget["max_frames"]
            estimates.append(elapsed * (1 - done) / max(done, 1e-9))
        return max(min(estimates), 0.0) if estimates else None

    def log(self, metrics: dict[str, Any]) -> None:
        eta = self.eta(metrics)
        line = (
            f"{self.unit[:3]} {metrics[self.unit]:>4d} | steps {human(metrics['env_steps']):>6} "
            f"| frames {human(metrics['frames']):>6} | episodes {human(metrics['episodes']):>6} "
            f"| return best {_score(metrics['return_max']):>8} mean {_score(metrics['return_mean']):>8} "
            f"median {_score(metrics['return_median']):>8} | {human(metrics['frames_per_second']):>6} frames/s "
            f"| elapsed {clock(metrics['elapsed'])} | ETA {clock(eta) if eta is not None else '?'}"
        )
        evaluation = metrics.get("eval_return_mean")
        if evaluation is not None and math.isfinite(evaluation):
            line += f" | eval {evaluation:.2f}"
        self._last = metrics
        self._progress = None
        self._unit_started = time.monotonic()
        self._print(line)

    def message(self, text: str) -> None:
        self._print(text)

    def table(self, name: str, columns: list[str], rows: list[list[Any]], step: int) -> None:
        shown = "; ".join(" ".join(_cell(value) for value in row) for row in rows[:TABLE_ROWS])
        self._print(f"{name} after {step}: {shown}")

    def close(self, status: str = "finished") -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            with self._lock:
                self.stream.write("\r\033[K")
                self.stream.flush()


def _score(value: float) -> str:
    """A return to two decimals, or ``-`` where none was measured (a learner's segment in
    which no episode ended gives NaN, which reads as a diverged network)."""
    return f"{value:.2f}" if math.isfinite(value) else "-"


def _cell(value: Any) -> str:
    """A table's value as the console shows it: text quoted, numbers short."""
    if isinstance(value, str):
        return repr(value)
    return f"{value:.2f}" if isinstance(value, float) else str(value)
