"""Errors a user can act on: each says what was wrong and what is allowed."""

from __future__ import annotations


class NeuroplugError(Exception):
    """Base class of every error neuroplug raises on purpose."""


class ConfigError(NeuroplugError, ValueError):
    """A configuration value is invalid; names the field and the allowed values."""

    def __init__(self, field: str, problem: str, allowed: str | None = None) -> None:
        self.field = field
        message = f"{field}: {problem}"
        if allowed:
            message += f" (allowed: {allowed})"
        super().__init__(message)


class PluginError(NeuroplugError):
    """A plugin could not be found, was claimed twice, or failed to import."""


def require(condition: bool, field: str, problem: str, allowed: str | None = None) -> None:
    """Raise :class:`ConfigError` for ``field`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(field, problem, allowed)
