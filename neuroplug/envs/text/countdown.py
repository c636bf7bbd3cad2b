"""``task=countdown``: reach a target from given numbers with ``+ - * /``, each number once.

The game of the ES and GRPO fine-tuning papers (TinyZero's Countdown): the prompt lists the
numbers and the target (``3,5,7=22:``), the completion is an expression (``3*5+7``) that a
verifier evaluates exactly (fractions; no ``eval``). Reward 1 for an expression using every
number exactly once that equals the target, ``format_reward`` (0.1) for a well-formed one
that does not, 0 for anything else. Every problem is solvable: its target is the value of a
random expression over its numbers.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from neuroplug.envs.text.task import Problem, TextTask
from neuroplug.errors import require

OPERATORS = "+-*/"


class Countdown(TextTask):
    """``numbers`` numbers from 1 to ``largest``; the target a positive integer up to
    ``largest_target`` reached by some expression over all of them."""

    name = "countdown"
    alphabet = "0123456789+-*/(),=:"

    def __init__(
        self, numbers: int = 3, largest: int = 20, largest_target: int = 100,
        format_reward: float = 0.1,
    ) -> None:  # fmt: skip
        require(2 <= numbers <= 6, "env.kwargs.numbers", f"got {numbers}", "2 to 6")
        require(2 <= largest <= 99, "env.kwargs.largest", f"got {largest}", "2 to 99")
        require(largest_target >= 1, "env.kwargs.largest_target", f"got {largest_target}", ">= 1")
        require(
            0.0 <= format_reward < 1.0, "env.kwargs.format_reward", f"got {format_reward}",
            "0 <= format_reward < 1",
        )  # fmt: skip
        self.numbers, self.largest = int(numbers), int(largest)
        self.largest_target, self.format_reward = int(largest_target), float(format_reward)

    @property
    def max_prompt_length(self) -> int:
        return 3 * self.numbers + len(str(self.largest_target)) + 1

    @property
    def max_new_tokens(self) -> int:
        # every number (2 digits), an operator between each two, a pair of brackets each
        return 2 * self.numbers + (self.numbers - 1) + 2 * (self.numbers - 1)

    def sample(self, rng: np.random.Generator) -> Problem:
        while True:
            values = [int(v) for v in rng.integers(1, self.largest + 1, size=self.numbers)]
            terms = [(Fraction(v), str(v)) for v in values]
            order = list(rng.permutation(len(terms)))
            terms = [terms[i] for i in order]
            while len(terms) > 1:  # combine the first two, left to right, brackets kept
                (a, left), (b, right) = terms[0], terms[1]
                operator = OPERATORS[int(rng.integers(0, 4))]
                if operator == "/" and (b == 0 or (a / b).denominator != 1):
                    operator = "+"
                value = _apply(a, b, operator)
                terms = [(value, f"({left}{operator}{right})"), *terms[2:]]
            value, expression = terms[0]
            if value.denominator == 1 and 1 <= value <= self.largest_target:
                answer = expression[1:-1] if expression.startswith("(") else expression
                prompt = ",".join(str(v) for v in values) + f"={int(value)}:"
                return Problem(prompt, answer, (tuple(values), int(value)))

    def verdict(self, problem: Problem, completion: str) -> tuple[bool, bool]:
        """(well formed, correct): whether the completion parses as an expression over
        exactly the problem's numbers, and whether it equals the target."""
        values, target = problem.data
        try:
            value, used = _Parser(completion).parse()
        except (ValueError, ZeroDivisionError):
            return False, False
        if sorted(used) != sorted(values):
            return True, False
        return True, value == target

    def reward(self, problem: Problem, completion: str) -> float:
        formed, correct = self.verdict(problem, completion)
        return 1.0 if correct else (self.format_reward if formed else 0.0)

    def correct(self, problem: Problem, completion: str) -> bool:
        return self.verdict(problem, completion)[1]


def _apply(a: Fraction, b: Fraction, operator: str) -> Fraction:
    if operator == "+":
        return a + b
    if operator == "-":
        return a - b
    if operator == "*":
        return a * b
    return a / b


class _Parser:
    """Recursive descent over ``+ - * /``, brackets and non-negative integers, exact in
    fractions; it records the numbers it read."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.used = text, 0, []

    def parse(self) -> tuple[Fraction, list[int]]:
        value = self._sum()
        if self.at != len(self.text):
            raise ValueError(f"unexpected {self.text[self.at]!r}")
        return value, self.used

    def _peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def _sum(self) -> Fraction:
        value = self._product()
        while self._peek() in ("+", "-"):
            operator = self.text[self.at]
            self.at += 1
            value = _apply(value, self._product(), operator)
        return value

    def _product(self) -> Fraction:
        value = self._atom()
        while self._peek() in ("*", "/"):
            operator = self.text[self.at]
            self.at += 1
            value = _apply(value, self._atom(), operator)
        return value

    def _atom(self) -> Fraction:
        if self._peek() == "(":
            self.at += 1
            value = self._sum()
            if self._peek() != ")":
                raise ValueError("unclosed bracket")
            self.at += 1
            return value
        start = self.at
        while self._peek().isdigit():
            self.at += 1
        if start == self.at:
            raise ValueError("expected a number")
        number = int(self.text[start : self.at])
        self.used.append(number)
        return Fraction(number)
