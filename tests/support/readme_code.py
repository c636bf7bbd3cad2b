"""The guide's example plugins (``docs/plugins.md``), executed as modules of their own (so
the guide is tested)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def readme_module(defines: str, name: str) -> types.ModuleType:
    """The guide's Python block containing ``defines`` (``"class SNES("``), as module ``name``."""
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    source = next(block for block in blocks if defines in block)
    module = types.ModuleType(name)
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, str(GUIDE), "exec"), module.__dict__)
    return module
