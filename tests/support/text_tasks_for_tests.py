"""A user's own text task, as a package would write one (``env.kwargs.task=
text_tasks_for_tests:Reverse``): reverse a string of letters."""

from __future__ import annotations

import numpy as np

from neuroplug.envs.text.task import Problem, TextTask, character_credit


class Reverse(TextTask):
    """Prompt ``abca>``, answer ``acba``."""

    name = "reverse"
    alphabet = "abcd>"

    def __init__(self, length: int = 3) -> None:
        self.length = length

    @property
    def max_prompt_length(self) -> int:
        return self.length + 1

    @property
    def max_new_tokens(self) -> int:
        return self.length

    def sample(self, rng: np.random.Generator) -> Problem:
        letters = "".join("abcd"[i] for i in rng.integers(0, 4, size=self.length))
        return Problem(letters + ">", letters[::-1])

    def reward(self, problem: Problem, completion: str) -> float:
        return character_credit(problem.answer, completion)
