"""``task=addition``: ``a+b=`` for numbers of up to ``digits`` digits, the sum the answer."""

from __future__ import annotations

import numpy as np

from neuroplug.envs.text.task import Problem, TextTask, character_credit, check_shaping
from neuroplug.errors import require


class Addition(TextTask):
    """Multi-digit addition: prompt ``123+45=``, answer ``168`` (``reverse``: the sum's
    digits least significant first, ``861``, the order a left-to-right writer carries in)."""

    name = "addition"
    alphabet = "0123456789+="

    def __init__(self, digits: int = 3, reverse: bool = False, shaping: str = "characters"):
        require(1 <= digits <= 9, "env.kwargs.digits", f"got {digits}", "1 to 9")
        check_shaping(shaping)
        self.digits, self.reverse, self.shaping = int(digits), bool(reverse), shaping

    @property
    def max_prompt_length(self) -> int:
        return 2 * self.digits + 2

    @property
    def max_new_tokens(self) -> int:
        return self.digits + 1

    def sample(self, rng: np.random.Generator) -> Problem:
        a, b = (int(n) for n in rng.integers(0, 10**self.digits, size=2))
        answer = str(a + b)
        return Problem(f"{a}+{b}=", answer[::-1] if self.reverse else answer)

    def reward(self, problem: Problem, completion: str) -> float:
        if self.shaping == "exact":
            return float(completion == problem.answer)
        return character_credit(problem.answer, completion)
