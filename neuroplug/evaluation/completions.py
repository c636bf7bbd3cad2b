"""What a text task's episodes wrote: each episode's context, prompt and completion, as
text (watch prints it; an env family that ``writes_text``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from neuroplug.envs.spec import EnvSpec
from neuroplug.envs.text.env import tokenizer_of
from neuroplug.evaluation.lockstep import EpisodeObserver, LockstepEvaluation
from neuroplug.population.members import Population


class CompletionRecorder(EpisodeObserver):
    """Keeps the text of every episode that ends: its last observation (the whole context,
    ids + 1) decoded, by work item."""

    def __init__(self, env: EnvSpec) -> None:
        self.tokenizer = tokenizer_of(env)
        self.texts: dict[int, str] = {}

    def observe(self, pool, items, env_ids, observations, started, ended) -> None:
        for row in np.flatnonzero(ended):
            ids = observations[row].astype(np.int64)
            self.texts[int(items[row])] = self.tokenizer.decode(ids[ids > 0] - 1)


SAMPLES = 8
"""Episodes whose text a run logs at each evaluation of a text task."""


def sample_completions(
    env: EnvSpec, policy, backend, params, request, episodes: int = SAMPLES
) -> list[list]:
    """``[text, reward]`` of the first ``episodes`` episodes of ``request`` played by
    ``params`` ``(D,)`` here (a lane each, so each is its own seed's prompt)."""
    recorder = CompletionRecorder(env)
    request = dataclasses.replace(request, episodes_per_member=episodes, progress=None)
    evaluation = LockstepEvaluation(
        env, Population.dense(params.unsqueeze(0)), policy, backend, request,
        max_envs=episodes, groups=1, env_threads=0, observer=recorder,
    )  # fmt: skip
    returns = evaluation.run().returns[0]
    return [[recorder.texts.get(item, ""), float(returns[item])] for item in range(episodes)]
