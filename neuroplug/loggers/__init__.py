"""Where per-generation metrics go: the console, a CSV file, or nowhere."""

from neuroplug.loggers.base import Logger, MultiLogger, build_loggers

__all__ = ["Logger", "MultiLogger", "build_loggers"]
