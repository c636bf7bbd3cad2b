"""Turn a composed config node into its schema dataclass, running its validation."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf

from neuroplug.errors import ConfigError

T = TypeVar("T")


def to_dataclass(schema: type[T], node: DictConfig | dict[str, Any], group: str) -> T:
    """``schema(**node)`` with a clear error for unknown fields; ``__post_init__`` validates."""
    values = (
        OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else dict(node)
    )
    allowed = {field.name for field in fields(schema)}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ConfigError(
            f"{group}.{unknown[0]}",
            f"is not a setting of {schema.__name__}",
            ", ".join(sorted(allowed)),
        )
    return schema(**values)
