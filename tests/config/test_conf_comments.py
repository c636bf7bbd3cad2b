"""Every name a ``conf/*.yaml`` comment points a reader at exists, where it says."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parents[2] / "conf"
DOTTED = re.compile(r"\bneuroplug\w*(?:\.\w+)+")


def _named_in_comments() -> list[tuple[str, str]]:
    """(file, dotted name) for every neuroplug name in a comment line of conf/."""
    named = []
    for path in sorted(CONF.rglob("*.yaml")):
        for line in path.read_text().splitlines():
            comment = line.strip()
            if comment.startswith("#"):
                named += [(str(path.relative_to(CONF)), name) for name in DOTTED.findall(comment)]
    return named


def _resolve(name: str) -> tuple[object, str, list[str]]:
    """The longest importable module of ``name``, and the attributes after it."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        return module, module.__name__, parts[split:]
    raise AssertionError(f"no module of {name} imports")


def test_the_comments_name_classes_to_check():
    files = {file for file, _ in _named_in_comments()}
    assert {"run/default.yaml", "scheduler/serial.yaml"} <= files


@pytest.mark.parametrize(("file", "name"), _named_in_comments())
def test_a_name_in_a_conf_comment_is_defined_where_it_says(file, name):
    module, module_name, attributes = _resolve(name)
    target = module
    for attribute in attributes:
        assert hasattr(target, attribute), f"{file}: {name} has no {attribute}"
        target = getattr(target, attribute)
    if attributes:  # a class named through its module is defined there, not re-exported
        defined = getattr(module, attributes[0])
        assert getattr(defined, "__module__", module_name) == module_name, (
            f"{file} names {name}, but {attributes[0]} is defined in {defined.__module__}"
        )
