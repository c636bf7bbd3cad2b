"""A text task as an env: the prompt fed a token a step, the actions written after it,
the reward on the completion; a text task through neuroplug's env config; bad settings
named."""

from __future__ import annotations

import numpy as np
import pytest

from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
from neuroplug.envs.text.env import TextTaskEnv
from neuroplug.envs.text.tokenizer import CharTokenizer
from neuroplug.errors import ConfigError


def _play(env: TextTaskEnv, completion: str, seed: int = 0):
    observation, _ = env.reset(seed=seed)
    observations, rewards, done = [observation], [], False
    written = [*env.tokenizer.encode(completion), env.tokenizer.end]
    prefill = len(env.tokenizer.encode(env.problem.prompt)) - 1
    step = 0
    while not done:
        action = written[step - prefill] if step >= prefill else 7  # 7: never read
        observation, reward, done, truncated, _ = env.step(action)
        observations.append(observation)
        rewards.append(reward)
        step += 1
        assert not truncated
    return observations, rewards


def test_the_prompt_comes_first_then_the_completion_and_its_reward():
    env = TextTaskEnv("addition", digits=2)
    env.reset(seed=3)
    answer = env.problem.answer
    observations, rewards = _play(env, answer, seed=3)
    prompt = env.tokenizer.encode(env.problem.prompt)
    last = observations[-1]
    assert list(last[: len(prompt)] - 1) == prompt  # the prompt, in order (ids + 1)
    assert env.tokenizer.decode(last[len(prompt) :].astype(int) - 1) == answer
    assert np.all(last[len(prompt) + len(answer) :] == 0)  # the end is not written
    assert rewards[-1] == 1.0 and sum(rewards[:-1]) == 0.0
    assert all(int((o != 0).sum()) == i + 1 for i, o in enumerate(observations[:-1]))
    assert len(rewards) <= env.max_steps


def test_a_wrong_completion_earns_less_and_the_completion_stops_at_its_cap():
    env = TextTaskEnv("sorting", length=4)
    _, rewards = _play(env, "9999")
    assert rewards[-1] < 1.0
    env.reset(seed=0)
    steps, done = 0, False
    while not done:  # never the end token: the task's cap ends it
        done = env.step(3)[2]
        steps += 1
    assert steps == env.max_steps and len(env.completion) == env.task.max_new_tokens


def test_the_tokenizer_encodes_characters_and_the_end():
    tokenizer = CharTokenizer("ab")
    assert tokenizer.encode("ba") == [2, 1] and tokenizer.vocabulary == 3
    assert tokenizer.decode([2, 1, tokenizer.end, 2]) == "ba"
    with pytest.raises(ValueError, match="cannot encode 'c'"):
        tokenizer.encode("abc")


def test_a_tokenizer_that_cannot_write_the_task_and_a_short_context_are_named():
    with pytest.raises(
        ConfigError, match=r"env.kwargs.alphabet: the tokenizer cannot encode '\+='"
    ):
        TextTaskEnv("addition", alphabet="0123456789")
    with pytest.raises(ConfigError, match=r"env.kwargs.context: a context of 5 tokens .* >= 12"):
        TextTaskEnv("addition", digits=3, context=5)


def test_a_text_task_is_an_env_of_the_text_family():
    config = EnvConfig(
        id="neuroplug.envs.text.registration:Sorting-v0",
        kwargs={"length": 3},
        vectorization="in_process",
    )
    spec = make_spec(config)
    assert str(spec.family) == "text"
    assert (
        spec.discrete and spec.obs_shape == (7,) and spec.num_actions == 12
    )  # the end and 11 characters
    assert spec.max_episode_steps == 6
