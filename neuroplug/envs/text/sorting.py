"""``task=sorting``: a string of digits, and the same digits in ascending order."""

from __future__ import annotations

import numpy as np

from neuroplug.envs.text.task import Problem, TextTask, character_credit, check_shaping
from neuroplug.errors import require


class Sorting(TextTask):
    """Prompt ``3141:``, answer ``1134`` (``length`` digits from the first ``symbols``)."""

    name = "sorting"
    alphabet = "0123456789:"

    def __init__(self, length: int = 5, symbols: int = 10, shaping: str = "characters"):
        require(1 <= length <= 32, "env.kwargs.length", f"got {length}", "1 to 32")
        require(2 <= symbols <= 10, "env.kwargs.symbols", f"got {symbols}", "2 to 10 digits")
        check_shaping(shaping)
        self.length, self.symbols, self.shaping = int(length), int(symbols), shaping

    @property
    def max_prompt_length(self) -> int:
        return self.length + 1

    @property
    def max_new_tokens(self) -> int:
        return self.length

    def sample(self, rng: np.random.Generator) -> Problem:
        digits = "".join(str(d) for d in rng.integers(0, self.symbols, size=self.length))
        return Problem(f"{digits}:", "".join(sorted(digits)))

    def reward(self, problem: Problem, completion: str) -> float:
        if self.shaping == "exact":
            return float(completion == problem.answer)
        return character_credit(problem.answer, completion)
