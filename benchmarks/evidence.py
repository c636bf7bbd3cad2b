"""What the evidence scripts (``coevolution.py``, ``self_play.py``, ``qd_reevaluation.py``)
share: their figure, their summary files, their command line, and how a match's result
reads."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def figure(columns: int = 2, **options):
    """A row of ``columns`` plots, 11 x 4 inches (matplotlib without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(1, columns, figsize=(11, 4), **options)


def write_summary(results: Path, drawn, lines: list[str], dpi: int = 90) -> None:
    """``curves.png`` (the figure ``drawn``) and ``summary.md`` (``lines``) in ``results``."""
    drawn.tight_layout()
    drawn.savefig(results / "curves.png", dpi=dpi)
    (results / "summary.md").write_text("\n".join(lines) + "\n")


def match_result(result: dict) -> str:
    """A ``neuroplug.tools.match`` result: ``0.980 [0.950, 0.992] (200 games)``."""
    low, high = result["interval"]
    return f"{result['score_rate']:.3f} [{low:.3f}, {high:.3f}] ({result['games']} games)"


def main(description: str, results: Path, run_all: Callable[[], None], summary: Callable[[], None]):
    """The scripts' command line: run what is not done, then summarise (``--summary``: only
    summarise)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--summary", action="store_true", help="only summarise what is done")
    arguments = parser.parse_args()
    results.mkdir(parents=True, exist_ok=True)
    if not arguments.summary:
        run_all()
    summary()
