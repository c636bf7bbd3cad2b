"""What a text task is: prompts drawn from a seed and a verifiable reward on completions.

A task is a class with the settings it takes as keyword arguments (``env.kwargs``), found
by name in the ``neuroplug.text_tasks`` entry-point group (``addition``, ``sorting``,
``countdown`` are neuroplug's own; a package adds its own there) or as
``package.module:Class``. It is pure Python: prompts and rewards need no torch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any, ClassVar

import numpy as np

from neuroplug.errors import ConfigError

GROUP = "neuroplug.text_tasks"
"""The entry-point group naming text tasks."""


@dataclass(frozen=True)
class Problem:
    """One prompt and what its reward needs to know."""

    prompt: str
    answer: str
    """A correct completion (the reward may accept others: Countdown's)."""
    data: Any = None
    """Anything else the task's reward reads (Countdown's numbers and target)."""


class TextTask(ABC):
    """Prompts and the reward of a completion; subclasses say what varies."""

    name: ClassVar[str] = ""
    alphabet: ClassVar[str] = ""
    """Every character a prompt or a correct completion may hold."""

    @property
    @abstractmethod
    def max_prompt_length(self) -> int:
        """The longest prompt, in characters."""

    @property
    @abstractmethod
    def max_new_tokens(self) -> int:
        """The longest completion generated (the end token not counted)."""

    @abstractmethod
    def sample(self, rng: np.random.Generator) -> Problem:
        """A problem drawn from ``rng``."""

    @abstractmethod
    def reward(self, problem: Problem, completion: str) -> float:
        """The completion's reward, in [0, 1] (1: correct)."""

    def correct(self, problem: Problem, completion: str) -> bool:
        """Whether the completion solves the problem (exact match, or as the task verifies)."""
        return completion == problem.answer


def character_credit(answer: str, completion: str) -> float:
    """1 for the answer itself, else the share of the answer's places the completion gets
    right, over the longer of the two (a dense signal for evolution from scratch; a
    completion longer than the answer loses its share)."""
    if completion == answer:
        return 1.0
    right = sum(a == c for a, c in zip(answer, completion, strict=False))
    return 0.9 * right / max(len(answer), len(completion), 1)


def check_shaping(shaping: str) -> None:
    """Refuse a reward shaping other than ``exact`` or ``characters``."""
    if shaping not in ("exact", "characters"):
        raise ConfigError(
            "env.kwargs.shaping",
            f"unknown shaping {shaping!r}",
            "exact (1 for a correct completion, else 0) or characters (partial credit per "
            "character in place)",
        )


def task_names() -> list[str]:
    """The tasks the entry-point group names."""
    return sorted(point.name for point in entry_points(group=GROUP))


@cache  # an evaluation builds its envs anew, hundreds at once: look the class up once
def task_class(name: str) -> type[TextTask]:
    """The class of task ``name`` (a name in the group, or ``package.module:Class``); a
    ConfigError names ``env.kwargs.task``."""
    if ":" in name:
        from neuroplug.config.targets import load_target

        found_class = load_target(name, "env.kwargs.task")
    else:
        found = [point for point in entry_points(group=GROUP) if point.name == name]
        if not found:
            raise ConfigError(
                "env.kwargs.task",
                f"no text task named {name!r}",
                ", ".join(task_names()) + ", or package.module:Class",
            )
        found_class = found[0].load()
    if not (isinstance(found_class, type) and issubclass(found_class, TextTask)):
        raise ConfigError(
            "env.kwargs.task", f"{name} is {found_class!r}", "a subclass of neuroplug's TextTask"
        )
    return found_class


def make_task(name: str, settings: dict[str, Any]) -> TextTask:
    """The task ``name`` (see :func:`task_class`) built with ``settings``; a ConfigError
    names ``env.kwargs.task`` or the setting refused."""
    built = task_class(name)
    try:
        return built(**settings)
    except TypeError as error:
        raise ConfigError(
            "env.kwargs", f"the {name} task refused {sorted(settings)}: {error}",
            "the task's own settings",
        ) from None  # fmt: skip
