"""One progress line per generation: counters, returns, speed, elapsed and ETA."""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO

from neuroplug.loggers.base import Logger


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


class ConsoleLogger(Logger):
    """Prints a line per generation to ``stream`` (stdout by default)."""

    def __init__(self, budget: dict[str, int | None], stream: TextIO | None = None) -> None:
        self.budget = budget
        self.stream = stream or sys.stdout

    def eta(self, metrics: dict[str, Any]) -> float | None:
        """Seconds left by whichever budget ends first, from the average pace so far."""
        elapsed = metrics["elapsed"]
        estimates = []
        if self.budget.get("max_generations") and metrics["generation"] > 0:
            done = metrics["generation"] / self.budget["max_generations"]
            estimates.append(elapsed * (1 - done) / max(done, 1e-9))
        if self.budget.get("max_frames") and metrics["frames"] > 0:
            done = metrics["frames"] / self.budget["max_frames"]
            estimates.append(elapsed * (1 - done) / max(done, 1e-9))
        return max(min(estimates), 0.0) if estimates else None

    def log(self, metrics: dict[str, Any]) -> None:
        eta = self.eta(metrics)
        line = (
            f"gen {metrics['generation']:>4d} | steps {human(metrics['env_steps']):>6} "
            f"| frames {human(metrics['frames']):>6} | episodes {human(metrics['episodes']):>6} "
            f"| return best {metrics['return_max']:8.2f} mean {metrics['return_mean']:8.2f} "
            f"median {metrics['return_median']:8.2f} | {human(metrics['frames_per_second']):>6} frames/s "
            f"| elapsed {clock(metrics['elapsed'])} | ETA {clock(eta) if eta is not None else '?'}"
        )
        evaluation = metrics.get("eval_return_mean")
        if evaluation is not None and math.isfinite(evaluation):
            line += f" | eval {evaluation:.2f}"
        print(line, file=self.stream, flush=True)

    def message(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
