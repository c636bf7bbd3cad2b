"""A command-line value of the wrong type, as neuroplug's one-line :class:`ConfigError`.

Hydra checks overrides against the dataclass schemas while composing, before neuroplug
runs, and reports a wrong type as OmegaConf's multi-line message. This names the field,
what it takes, and an example built from its current value, like every other bad value.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

from neuroplug.errors import ConfigError

_PHRASES = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


def wrong_type_error(error: BaseException) -> ConfigError | None:
    """The ConfigError for an OmegaConf type validation somewhere in ``error``'s chain, else None."""
    from omegaconf.errors import ValidationError

    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ValidationError):
        cause = cause.__cause__ or cause.__context__
    field = getattr(cause, "full_key", None)
    if cause is None or not field:
        return None
    expected = _declared_type(cause) or _node_type(cause.child_node)
    if expected is None:
        return None
    phrase = _phrase(expected)
    allowed = phrase
    example = _example(cause.child_node)
    if example is not None:
        allowed += f", e.g. {field}={example}"
    value = getattr(cause, "value", None)
    return ConfigError(field, f"{value!r} is not {phrase}", allowed)


def _declared_type(cause: Any) -> Any:
    """The field's annotation in its dataclass schema (e.g. ``ESConfig.sigma: float``)."""
    schema, key = getattr(cause, "object_type", None), getattr(cause, "key", None)
    if not (dataclasses.is_dataclass(schema) and isinstance(key, str)):
        return None
    try:
        return typing.get_type_hints(schema).get(key)
    except Exception:  # an annotation that cannot be resolved: fall back to the node
        return None


def _node_type(node: Any) -> Any:
    """The type OmegaConf's node enforces, when the schema could not tell."""
    from omegaconf import BooleanNode, FloatNode, IntegerNode, ListConfig, StringNode

    kinds = {
        BooleanNode: bool,
        IntegerNode: int,
        FloatNode: float,
        StringNode: str,
        ListConfig: list,
    }
    return next((kind for node_class, kind in kinds.items() if isinstance(node, node_class)), None)


def _phrase(annotation: Any) -> str:
    """``float | None`` -> ``a number or null``; ``list[int]`` -> ``a list of integers``."""
    arguments = [argument for argument in typing.get_args(annotation) if argument is not type(None)]
    if len(arguments) < len(typing.get_args(annotation)):  # Optional
        inner = arguments[0] if len(arguments) == 1 else typing.Union[tuple(arguments)]  # noqa: UP007
        return f"{_phrase(inner)} or null"
    if typing.get_origin(annotation) in (list, tuple) or annotation in (list, tuple):
        item = arguments[0] if arguments else None
        return f"a list of {_plural(item)}" if item in _PHRASES else "a list"
    if typing.get_origin(annotation) is typing.Union:
        return " or ".join(_phrase(argument) for argument in arguments)
    return _PHRASES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plural(item: Any) -> str:
    return {bool: "booleans", int: "integers", float: "numbers", str: "strings"}[item]


def _example(node: Any) -> str | None:
    """The field's current value, written as an override would take it."""
    from omegaconf import ListConfig, OmegaConf, ValueNode

    if isinstance(node, ListConfig):
        items = [_scalar(item) for item in OmegaConf.to_container(node)]
        return None if None in items else "[" + ",".join(items) + "]"
    if isinstance(node, ValueNode):
        return _scalar(node._value())
    return None


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return value if value.replace("_", "").isalnum() else json.dumps(value)
    return None
