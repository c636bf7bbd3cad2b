"""The parity page lists what the suite runs: its table of comparisons is the suite's own
(``benchmarks/parity/suite.py``), and every method the suite compares shows its parity rows
on its docs page. Checked without running anything (the suite imports no torch)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def suite():
    """``benchmarks/parity/suite.py`` (a script's module, not the package's)."""
    name = "parity_suite"
    if name not in sys.modules:  # dataclasses look their module up there
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks/parity/suite.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def block(page: Path, name: str) -> str | None:
    """The text between the page's ``<!-- parity:name -->`` markers (None without them)."""
    found = re.search(
        rf"<!-- parity:{re.escape(name)} -->\n(.*?)\n?<!-- /parity:{re.escape(name)} -->",
        page.read_text(),
        re.S,
    )
    return None if found is None else found.group(1)


def test_the_pages_table_of_comparisons_is_the_suites():
    assert block(DOCS / "parity.md", "budgets") == suite().budgets_markdown()


def test_every_compared_method_shows_its_parity_on_its_page():
    module = suite()
    for method in {comparison.method for comparison in module.COMPARISONS}:
        page = DOCS / module.DOC_PAGES[method]
        assert block(page, method) is not None, f"{page} has no parity block for {method}"


def test_every_comparison_has_three_seeds_and_a_reference_at_least():
    for comparison in suite().COMPARISONS:
        assert len(comparison.seeds) >= 3, comparison.key  # issue 68: >= 3, >= 5 when cheap
        assert comparison.references, comparison.key
        assert comparison.budget % comparison.bin == 0 or comparison.unit == "env_steps"
