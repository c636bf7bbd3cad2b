"""Where per-generation metrics go: the console, a CSV file, W&B, or nowhere."""

from neuroplug.loggers.base import Logger, MultiLogger
from neuroplug.loggers.build import build_loggers

__all__ = ["Logger", "MultiLogger", "build_loggers"]
