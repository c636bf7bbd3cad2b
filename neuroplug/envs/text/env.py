"""A text task as a gymnasium env: the prompt fed a token a step, then the policy's tokens.

The observation is the context so far, ``context`` places holding token id + 1 (float32;
0 pads the unused places, whatever the tokenizer's ids). At the reset it holds the
prompt's first token; while the prompt lasts each step shows its next token and the
action is not read (the prefill, one token a step, so a cached model's state sees every
token once); from then on each action is the id of the completion's next token. The
episode ends at the end token, after ``max_new_tokens`` tokens,
or when the context is full, with the task's reward on the completion (0 before).

An evaluation of P members over B episodes each is then P x B generations advanced one
token a step in one batched forward (members sharing the base model's product in low
rank), a transformer's keys and values kept as its state (``net.type=causal_lm``).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from neuroplug.envs.text.task import Problem, make_task
from neuroplug.envs.text.tokenizer import make_tokenizer
from neuroplug.errors import ConfigError


class TextTaskEnv(gymnasium.Env):
    """``task`` (a name or ``package.module:Class``) built with ``settings``; ``tokenizer``
    a local directory holding a model's own (Hugging Face) tokenizer, or empty for the
    character tokenizer of ``alphabet`` (default: the task's own)."""

    metadata = {"render_modes": []}

    def __init__(
        self, task: str = "addition", context: int = 0, alphabet: str = "",
        tokenizer: str = "", **settings: Any,
    ) -> None:  # fmt: skip
        self.task = make_task(task, settings)
        self.tokenizer = make_tokenizer(tokenizer, alphabet or self.task.alphabet)
        missing = self.tokenizer.missing(self.task.alphabet)
        if missing:
            raise ConfigError(
                "env.kwargs.tokenizer" if tokenizer else "env.kwargs.alphabet",
                f"the tokenizer cannot encode {missing!r}, which the {task} task writes",
                "a tokenizer that writes every one of these characters back as it is"
                if tokenizer
                else f"an alphabet holding every one of {self.task.alphabet!r} (or leave it "
                "empty: the task's own)",
            )
        # A tokenizer of words may spend a token a character (ours does): the longest text.
        needed = self.task.max_prompt_length + self.task.max_new_tokens
        self.context = int(context) or needed
        if self.context < needed:
            raise ConfigError(
                "env.kwargs.context",
                f"a context of {self.context} tokens cannot hold the {task} task's longest "
                f"prompt ({self.task.max_prompt_length}) and completion "
                f"({self.task.max_new_tokens})",
                f">= {needed}, or 0 for exactly that",
            )
        vocabulary = self.tokenizer.vocabulary
        self.observation_space = gymnasium.spaces.Box(
            0.0, float(vocabulary), (self.context,), np.float32
        )
        self.action_space = gymnasium.spaces.Discrete(vocabulary)
        self.problem: Problem | None = None
        self._tokens = np.zeros(self.context, np.float32)
        self._prompt: list[int] = []
        self._length = 0
        self._completion: list[int] = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.problem = self.task.sample(self.np_random)
        self._prompt = self.tokenizer.encode(self.problem.prompt)
        self._tokens[:] = 0.0
        self._tokens[0] = self._prompt[0] + 1
        self._length, self._completion = 1, []
        return self._tokens.copy(), {}

    def step(self, action):
        if self._length < len(self._prompt):  # the prefill: the prompt's next token
            self._tokens[self._length] = self._prompt[self._length] + 1
            self._length += 1
            return self._tokens.copy(), 0.0, False, False, {}
        token = int(np.asarray(action).reshape(-1)[0])
        end = token == self.tokenizer.end
        if not end:
            self._completion.append(token)
            self._tokens[self._length] = token + 1
            self._length += 1
        finished = (
            end or len(self._completion) >= self.task.max_new_tokens or self._length >= self.context
        )
        if not finished:
            return self._tokens.copy(), 0.0, False, False, {}
        reward = self.task.reward(self.problem, self.completion)
        return self._tokens.copy(), float(reward), True, False, {}

    @property
    def completion(self) -> str:
        """The completion so far, as text."""
        return self.tokenizer.decode(self._completion)

    @property
    def max_steps(self) -> int:
        """The longest episode: the prefill and the completion (gymnasium specs read it)."""
        return self.task.max_prompt_length - 1 + self.task.max_new_tokens


def tokenizer_of(spec):
    """The tokenizer of a text task's env spec (its env built once to ask)."""
    env = spec.maker.make()
    try:
        return env.unwrapped.tokenizer
    finally:
        env.close()
