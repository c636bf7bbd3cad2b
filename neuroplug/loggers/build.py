"""Build the loggers a run asked for (each kind imported only when chosen)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from neuroplug.loggers.base import Logger, MultiLogger

if TYPE_CHECKING:
    from neuroplug.config.schema import LoggerConfig
    from neuroplug.experiment.typed import Experiment


def build_loggers(
    settings: LoggerConfig,
    run_dir: Path,
    budget: dict[str, int | None],
    config: Experiment,
    unit: str = "generation",
) -> MultiLogger:
    """The run's local record (``metrics.csv``, always) and the loggers named in
    ``logger.kinds`` (W&B is imported only when asked for; ``csv`` adds nothing more).
    ``unit`` is what a logged row is and the metric that counts them: ``generation``, or a
    learner's ``segment``."""
    from neuroplug.loggers.console import ConsoleLogger
    from neuroplug.loggers.csv_logger import METRICS_FILE, CSVLogger

    loggers: list[Logger] = [CSVLogger(Path(run_dir) / METRICS_FILE, unit)]
    for kind in settings.kinds:
        if kind == "console":
            loggers.append(ConsoleLogger(budget, unit=unit))
        elif kind == "wandb":
            from neuroplug.loggers.wandb_logger import WandbLogger

            loggers.append(WandbLogger(settings, Path(run_dir), config, unit))
    return MultiLogger(loggers)
