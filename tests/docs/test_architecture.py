"""The architecture page draws what is checked: its layer drawing is `.importlinter`'s core
contract, and its layout table names every module and folder of the core package."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"


def checked_layers() -> list[str]:
    """The core package's layers as `lint-imports` checks them, top to bottom."""
    linter = configparser.ConfigParser()
    linter.read(ROOT / ".importlinter")
    layers = linter["importlinter:contract:core-layers"]["layers"]
    return [line.strip() for line in layers.strip().splitlines()]


def section(title: str) -> str:
    text = PAGE.read_text()
    start = text.index(title)
    following = text.find("\n#", start + len(title))
    return text[start : following if following != -1 else len(text)]


def test_the_layer_drawing_is_the_checked_contract():
    drawing = re.search(r"```\n(.*?)```", section("### Layers"), re.S).group(1)
    assert [line.strip() for line in drawing.strip().splitlines()] == checked_layers()


def test_the_layout_table_names_every_module_and_folder_of_the_core():
    named = set()
    for row in re.findall(r"^\| (`.*?) \|", section("## Layout"), re.M):
        named |= {name.rstrip("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", row)}
    package = ROOT / "neuroplug"
    present = {
        entry.stem if entry.suffix == ".py" else entry.name
        for entry in package.iterdir()
        if (entry.suffix == ".py" and entry.name != "__init__.py")
        or (entry.is_dir() and (entry / "__init__.py").exists())
    }
    assert named == present


def test_every_layer_is_a_module_or_folder_of_the_core():
    package = ROOT / "neuroplug"
    for line in checked_layers():
        for layer in line.split("|"):
            name = layer.strip()
            assert (package / f"{name}.py").exists() or (package / name / "__init__.py").exists(), (
                name
            )
