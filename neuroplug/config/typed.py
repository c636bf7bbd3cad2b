"""Turn a composed config node into its schema dataclass, running its validation."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf

from neuroplug.errors import ConfigError

T = TypeVar("T")


def to_dataclass(schema: type[T], node: DictConfig | dict[str, Any], group: str) -> T:
    """``schema(**node)`` with a clear error for unknown fields; building it checks the
    values (:meth:`neuroplug.config.schema.CheckedConfig.check`)."""
    if isinstance(node, DictConfig):
        # missing_keys gives full dotted paths from the root config (e.g. "env.task_id").
        missing = sorted(OmegaConf.missing_keys(node))
        if missing:
            key = missing[0] if missing[0].startswith(f"{group}.") else f"{group}.{missing[0]}"
            raise ConfigError(key, "is required but not set", f"set {key}=...")
        values = OmegaConf.to_container(node, resolve=True)
    else:
        values = dict(node)
    allowed = {field.name for field in fields(schema)}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigError(
            f"{group}.{unknown[0]}",
            f"is not a setting of {schema.__name__}",
            ", ".join(sorted(allowed)),
        )
    return schema(**values)
