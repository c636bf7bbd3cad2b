"""A text task as a gymnasium env: the prompt, then the policy's tokens a step each.

The observation is the context so far, ``context`` places holding token id + 1 (float32;
0 pads the unused places, whatever the tokenizer's ids). At the reset it holds the whole
prompt (a cached model reads it in one forward, the prefill: :mod:`neuroplug.nets.kv_cache`);
each action is the id of the completion's next token, written after it. The episode ends
at the end token, after ``max_new_tokens`` tokens, or when the context is full, with the
task's reward on the completion (0 before).

An evaluation of P members over B episodes each is then P x B generations advanced one
token a step in one batched forward (members sharing the base model's product in low
rank), a transformer's keys and values kept as its state (``net.type=causal_lm``).

``scoring="likelihood"`` scores the task's answer instead of a completion (teacher
forcing): the action is a score per token (the network's outputs, ``tanh``-squashed into
the action box, as any continuous action; ``LOGIT_CAP`` times it are the logits, the soft
cap of Gemma 2's logits), each step's context holds the answer's tokens so far whatever the
action, and the reward is 1 where every one of the answer's tokens (and its end) is the
top-scored, the completion greedy decoding writes, else 0.9 x the mean probability the
scores give them: a fitness smooth in the weights where a written completion's is a step
function of them (its argmaxes move only when a perturbation crosses a tie), for training
from scratch.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from neuroplug.envs.text.task import Problem, make_task
from neuroplug.envs.text.tokenizer import make_tokenizer
from neuroplug.errors import ConfigError

SCORINGS = ("completion", "likelihood")
"""``env.kwargs.scoring``: what an episode's reward is on (see the module docstring)."""

LOGIT_CAP = 10.0
"""``scoring=likelihood``: the logits are this times the action in [-1, 1] (Gemma 2 caps
its logits at 30 as ``30 tanh(x / 30)``; at 10 a token can still take all but 3e-8 of
addition's 13 tokens' probability)."""


class TextTaskEnv(gymnasium.Env):
    """``task`` (a name or ``package.module:Class``) built with ``settings``; ``tokenizer``
    a local directory holding a model's own (Hugging Face) tokenizer, or empty for the
    character tokenizer of ``alphabet`` (default: the task's own); ``scoring`` one of
    :data:`SCORINGS`."""

    metadata = {"render_modes": []}

    def __init__(
        self, task: str = "addition", context: int = 0, alphabet: str = "",
        tokenizer: str = "", scoring: str = "completion", **settings: Any,
    ) -> None:  # fmt: skip
        if scoring not in SCORINGS:
            raise ConfigError(
                "env.kwargs.scoring",
                f"unknown scoring {scoring!r}",
                "completion (the policy writes; the task's reward) or likelihood (the task's "
                "answer scored token by token)",
            )
        self.scoring = scoring
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
        self.action_space = (
            gymnasium.spaces.Box(-1.0, 1.0, (vocabulary,), np.float32)
            if scoring == "likelihood"
            else gymnasium.spaces.Discrete(vocabulary)
        )
        self.problem: Problem | None = None
        self._tokens = np.zeros(self.context, np.float32)
        self._prompt: list[int] = []
        self._length = 0
        self._completion: list[int] = []
        self._targets: list[int] = []
        """``scoring=likelihood``: the answer's tokens, and the end where it has room."""
        self._probabilities: list[float] = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.problem = self.task.sample(self.np_random)
        self._prompt = self.tokenizer.encode(self.problem.prompt)
        self._tokens[:] = 0.0
        self._tokens[: len(self._prompt)] = np.asarray(self._prompt, np.float32) + 1
        self._length, self._completion = len(self._prompt), []
        if self.scoring == "likelihood":
            answer = self.tokenizer.encode(self.problem.answer)[: self.task.max_new_tokens]
            room = min(self.task.max_new_tokens, self.context - len(self._prompt))
            self._targets = answer[:room] + ([self.tokenizer.end] if len(answer) < room else [])
            self._probabilities = []
        return self._tokens.copy(), {}

    def step(self, action):
        if self.scoring == "likelihood":
            return self._score(np.asarray(action, np.float64).reshape(-1))
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

    def _score(self, scores: np.ndarray):
        """``scoring=likelihood``'s step: the probability and the top-scored token at the
        answer's next place, then that place written with the answer's token."""
        target = self._targets[len(self._probabilities)]
        logits = LOGIT_CAP * scores
        shifted = np.exp(logits - logits.max())
        self._probabilities.append(float(shifted[target] / shifted.sum()))
        self._completion.append(int(scores.argmax()))
        if target != self.tokenizer.end:
            self._tokens[self._length] = target + 1
            self._length += 1
        if len(self._probabilities) < len(self._targets):
            return self._tokens.copy(), 0.0, False, False, {}
        if self._completion == self._targets:
            reward = 1.0
        else:
            reward = 0.9 * float(np.mean(self._probabilities))
        # The last observation shows what greedy decoding writes after each right prefix
        # (what completions and watch print), not the answer the steps were fed.
        shown = self._tokens.copy()
        written = self._written()
        start = len(self._prompt)
        shown[start:] = 0.0
        shown[start : start + len(written)] = np.asarray(written, np.float32) + 1
        return shown, reward, True, False, {}

    def _written(self) -> list[int]:
        """The top-scored tokens so far, up to the first end."""
        end = self.tokenizer.end
        return (
            self._completion[: self._completion.index(end)]
            if end in self._completion
            else (list(self._completion))
        )

    @property
    def completion(self) -> str:
        """The completion so far, as text (``scoring=likelihood``: the top-scored tokens)."""
        return self.tokenizer.decode(
            self._written() if self.scoring == "likelihood" else self._completion
        )

    @property
    def max_steps(self) -> int:
        """The longest episode: the completion's tokens (gymnasium specs read it)."""
        return self.task.max_new_tokens


def tokenizer_of(spec):
    """The tokenizer of a text task's env spec (its env built once to ask)."""
    env = spec.maker.make()
    try:
        return env.unwrapped.tokenizer
    finally:
        env.close()
