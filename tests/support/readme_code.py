"""The README's example plugins, executed as modules of their own (so the guide is tested)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_module(defines: str, name: str) -> types.ModuleType:
    """The README's Python block containing ``defines`` (``"class SNES("``), as module ``name``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    source = next(block for block in blocks if defines in block)
    module = types.ModuleType(name)
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, str(README), "exec"), module.__dict__)
    return module
