"""A command-line override Hydra cannot parse, as neuroplug's one-line error.

Most such overrides were written right and then cut by the shell, which splits arguments
at spaces and strips one level of quotes: ``net.hidden_sizes=[64, 64]`` reaches Hydra as
``net.hidden_sizes=[64,`` and ``64]``, ``-m algo=ga, es`` as ``algo=ga,`` and ``es``. Hydra
reports the first piece in its grammar's words (``no viable alternative at input
'[64,'``) and a link; this names the setting, says what the shell did, and gives the
override that works.
"""

from __future__ import annotations

from neuroplug.errors import ConfigError

ALLOWED = (
    "key=value, one argument each: a list as [64,64] and a sweep as ga,es without spaces "
    "(or the whole override in quotes, 'net.hidden_sizes=[64, 64]'); the grammar: "
    "https://hydra.cc/docs/advanced/override_grammar/basic/"
)

_CLOSERS = {"[": "]", "{": "}", "(": ")"}


def override_syntax_error(error: BaseException, argv: list[str]) -> ConfigError | None:
    """The ConfigError for an override in ``argv`` (the command line) that Hydra could not
    parse, found in ``error``'s chain; else None."""
    from hydra.errors import OverrideParseException

    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, OverrideParseException):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    override = cause.override
    key, equals, value = override.partition("=")
    rest = _arguments_after(override, argv)
    if not equals:
        before = _argument_before(override, argv)
        if before is not None and (before.endswith(",") or _unclosed(before)):
            joined = before + override
            return ConfigError(
                before.partition("=")[0].lstrip("+~"),
                f"the shell split {before} {override} at the space into two arguments",
                f"{joined}, or the override in quotes",
            )
        if before is not None and "=" in before:
            return ConfigError(
                override,
                f"not an override (no '='); after {before}, it reads as a value with a space, "
                f"which must be quoted: '{before} {override}'",
                ALLOWED,
            )
        return ConfigError(override, "not an override (no '=')", ALLOWED)
    field = key.lstrip("+~")
    pieces = _fragments(rest)  # what the shell cut off: the next arguments without "="
    opened = _unclosed(value)
    if opened and pieces:
        return ConfigError(
            field,
            f"the {opened} is not closed: the shell split the override at a space, so "
            f"{override} and {' '.join(pieces)} came as separate arguments",
            f"{_join_until_closed(override, pieces)}, or the whole override in quotes",
        )
    if opened:
        return ConfigError(
            field, f"the {opened} in {value} is not closed", f"{override}{_CLOSERS[opened]}"
        )
    if value.endswith(","):
        if pieces:
            return ConfigError(
                field,
                f"the sweep list ends with a comma: the shell split it at a space, so "
                f"{override} and {pieces[0]} came as separate arguments",
                f"{override}{pieces[0]}, without spaces",
            )
        return ConfigError(field, "the sweep list ends with a comma", override.rstrip(","))
    quote = _unclosed_quote(value)
    if quote:
        return ConfigError(
            field,
            f"the {quote} in {value} is not closed (the shell removes a level of quotes: "
            f"quote the whole override with the other kind, \"{field}='a b'\")",
            ALLOWED,
        )
    return ConfigError(field, f"{value!r} cannot be read: {_grammar_complaint(cause)}", ALLOWED)


def _unclosed(value: str) -> str | None:
    """The first bracket of ``value`` left open, if any."""
    for opener, closer in _CLOSERS.items():
        if value.count(opener) > value.count(closer):
            return opener
    return None


def _unclosed_quote(value: str) -> str | None:
    for quote, name in (("'", "single quote"), ('"', "double quote")):
        if value.count(quote) % 2:
            return name
    return None


def _arguments_after(override: str, argv: list[str]) -> list[str]:
    if override not in argv:
        return []
    return [argument for argument in argv[argv.index(override) + 1 :] if argument != "-m"]


def _fragments(rest: list[str]) -> list[str]:
    pieces = []
    for argument in rest:
        if "=" in argument or argument.startswith("-"):
            break
        pieces.append(argument)
    return pieces


def _argument_before(override: str, argv: list[str]) -> str | None:
    if override not in argv or argv.index(override) == 0:
        return None
    return argv[argv.index(override) - 1]


def _join_until_closed(override: str, rest: list[str]) -> str:
    """``override`` with the arguments after it that close its bracket, spaces dropped."""
    joined = override
    for argument in rest:
        joined += argument
        if _unclosed(joined.partition("=")[2]) is None:
            break
    return joined


def _grammar_complaint(error: BaseException) -> str:
    """Hydra's reason without its first line's repetition of the override and its link."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    kept = [
        line
        for line in lines
        if not line.startswith(("Error parsing override", "See https://hydra.cc"))
        and set(line) != {"^"}
    ]
    return "; ".join(kept) or "not in Hydra's override grammar"
