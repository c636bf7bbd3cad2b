"""Every ``python -m neuroplug ...`` (or ``bash scripts/run.sh ...``) command the README and the docs show is accepted as
written: its options exist, its values have the right types and pass the checks a run makes
before anything is built (what ``python -m neuroplug`` refuses in one line). A command a
page shows *failing* is listed in ``SHOWN_FAILING`` with the field its error names, and
must fail so.

Nothing is trained and no env is built: a newcomer copies these commands first, and an
option renamed or a config removed since a page was written shows up here.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

PROGRAMS = ("python -m neuroplug ", "scripts/run.sh ")
"""How a page starts a run: directly, or through the README's set-up script."""
NO_RUN_FLAGS = {"--help", "-h", "--cfg", "-c", "--info", "--list-plugins", "--resolve"}
"""Flags that print and exit: there is no run to check."""

SHOWN_FAILING = {
    "algo=ess": "algo=ess",
    "algo.sigma=abc": "algo.sigma",
    "algo.population_size=9": "algo.population_size",
    # The plugin guide's commands before its package is installed, or for plugins it invents.
    "env=gridworld": "env=gridworld",
    "algo=a2c": "algo=a2c",
    "algo=ddpg": "algo=ddpg",
}
"""An override the page shows being refused -> the field the refusal names."""

USERS_OWN = {"+sweep=slurm"}
"""Options a page has the reader write first (docs/tracking.md's SLURM sweep config)."""

PLACEHOLDER = re.compile(r"<[^>]*>|…|\.\.\.|=S\b")
"""What a page writes for "fill in your own": ``<run dir>``, ``…``, ``run.seed=S``."""


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    overrides: tuple[str, ...]
    multirun: bool

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: python -m neuroplug {' '.join(self.overrides)}"


def _code_texts(text: str) -> list[tuple[int, str]]:
    """(line number, code) for each fenced block's logical lines (backslash continuations
    joined) and each inline code span."""
    found: list[tuple[int, str]] = []
    in_block = False
    pending, pending_line = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            stripped = line.strip()
            if not pending:
                pending_line = number
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            found.append((pending_line, pending + stripped))
            pending = ""
        else:
            found.extend((number, span) for span in re.findall(r"`([^`\n]+)`", line))
    return found


def _commands() -> list[Command]:
    commands = []
    for page in PAGES:
        for line, code in _code_texts(page.read_text()):
            if PLACEHOLDER.search(code):
                continue
            starts = [(code.find(program), program) for program in PROGRAMS]
            starts = [(start, program) for start, program in starts if start >= 0]
            if not starts:
                continue
            start, program = min(starts)
            try:
                words = shlex.split(code[start + len(program) :], comments=True)
            except ValueError:  # an unbalanced quote: prose, not a command
                continue
            if words and words[-1] == "&":
                words = words[:-1]
            if not words or NO_RUN_FLAGS & set(words):
                continue
            multirun = "-m" in words or "--multirun" in words
            overrides = tuple(word for word in words if word not in ("-m", "--multirun"))
            if USERS_OWN & set(overrides):
                continue
            commands.append(Command(str(page.relative_to(ROOT)), line, overrides, multirun))
    return commands


COMMANDS = _commands()


def _one_job(command: Command) -> list[str]:
    """A multirun's first job: each swept value list taken at its first value (a bracketed
    list is one value)."""
    if not command.multirun:
        return list(command.overrides)
    first = []
    for override in command.overrides:
        key, _, value = override.partition("=")
        if value and "," in value and not value.startswith(("[", "{", "'", '"')):
            value = value.split(",")[0]
        first.append(f"{key}={value}" if _ else override)
    return first


@pytest.fixture(scope="module")
def compose_once():
    """:func:`neuroplug.testing.compose` with the schemas registered and Hydra initialised
    once for the module (half the time a command, for 80 commands)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from neuroplug.config.paths import conf_dir
    from neuroplug.experiment.hydra_store import register_resolvers, register_schemas

    register_resolvers()
    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        yield lambda overrides: hydra_compose(config_name="config", overrides=overrides)
    GlobalHydra.instance().clear()


def _error_field(compose, overrides: list[str]) -> str | None:
    """The field a run of ``overrides`` would refuse before anything is built (None: none)."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from neuroplug.app import resolve_resume
    from neuroplug.errors import ConfigError
    from neuroplug.experiment.network_choice import check_network_settings
    from neuroplug.experiment.typed import (
        check_budget_unit,
        check_virtual_batch_norm,
        typed_experiment,
    )

    try:
        config = compose(overrides)
        if config.run.resume in (None, "auto"):
            config, _ = resolve_resume(config)
        experiment = typed_experiment(config)
        check_budget_unit(experiment)
        check_virtual_batch_norm(experiment)
        check_network_settings(experiment.net)
    except ConfigError as error:
        return str(error)
    except (HydraException, OmegaConfBaseException) as error:
        return f"{type(error).__name__}: {error}"
    return None


def test_the_pages_show_commands():
    # The scan itself: a change to how pages are written must not silently check nothing.
    assert len(COMMANDS) >= 50, [str(command) for command in COMMANDS]
    pages = {command.page for command in COMMANDS}
    assert {"README.md", "docs/getting-started.md", "docs/learners/td3-sac.md"} <= pages


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_a_shown_command_is_accepted_or_fails_as_the_page_says(command, compose_once):
    overrides = _one_job(command)
    error = _error_field(compose_once, overrides)
    shown_failing = [SHOWN_FAILING[word] for word in overrides if word in SHOWN_FAILING]
    if shown_failing:
        # Hydra names a missing group option algo/ess; the CLI reports it as algo=ess.
        field = shown_failing[0]
        assert error is not None and (field in error or field.replace("=", "/") in error), (
            f"{command}\n{error}"
        )
    else:
        assert error is None, f"{command}\n{error}"
