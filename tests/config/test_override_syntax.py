"""Overrides Hydra cannot parse, said as neuroplug's one-line errors
(neuroplug/config/override_syntax.py): most were cut by the shell at a space."""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException

from neuroplug.config.override_syntax import override_syntax_error


def _error_for(argv: list[str]) -> str:
    """neuroplug's message for the first override of ``argv`` that Hydra refuses."""
    try:
        OverridesParser.create().parse_overrides([a for a in argv if a != "-m"])
    except OverrideParseException as error:
        wrapped = RuntimeError("Hydra failed")  # as hydra.main hands it over: in a chain
        wrapped.__cause__ = error
        return str(override_syntax_error(wrapped, argv))
    raise AssertionError(f"Hydra parsed {argv}")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (  # net.hidden_sizes=[64, 64] unquoted
            ["net.hidden_sizes=[64,", "64]", "algo=es"],
            "net.hidden_sizes: the [ is not closed: the shell split the override at a space, "
            "so net.hidden_sizes=[64, and 64] came as separate arguments "
            "(allowed: net.hidden_sizes=[64,64], or the whole override in quotes)",
        ),
        (
            ["net.hidden_sizes=[64,", "64,", "64]"],
            "(allowed: net.hidden_sizes=[64,64,64], or",
        ),
        (["net.hidden_sizes=[64,64", "algo=es"], "the [ in [64,64 is not closed"),
        (  # -m algo=ga, es
            ["-m", "algo=ga,", "es"],
            "algo: the sweep list ends with a comma: the shell split it at a space, so "
            "algo=ga, and es came as separate arguments (allowed: algo=ga,es, without spaces)",
        ),
        (["algo=ga,"], "algo: the sweep list ends with a comma (allowed: algo=ga)"),
        (  # run.output_dir=my dir unquoted
            ["run.output_dir=my", "dir"],
            "dir: not an override (no '='); after run.output_dir=my, it reads as a value with "
            "a space, which must be quoted: 'run.output_dir=my dir'",
        ),
        (["algo.sigma='0.1"], "algo.sigma: the single quote in '0.1 is not closed"),
        (["algo.sigma=0.1)"], "algo.sigma: '0.1)' cannot be read: extraneous input ')'"),
    ],
)
def test_an_unparsable_override_names_its_setting_and_the_override_that_works(argv, expected):
    assert expected in _error_for(argv)


def test_other_errors_are_left_to_the_other_readers():
    assert override_syntax_error(ValueError("not a parse error"), ["algo=es"]) is None
