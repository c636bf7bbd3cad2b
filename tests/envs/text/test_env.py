"""A text task as an env: the prompt shown at the reset, the actions written after it,
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
    step = 0
    while not done:
        action = written[step]
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
    # The whole prompt at the reset, then a token more each step.
    assert all(int((o != 0).sum()) == len(prompt) + i for i, o in enumerate(observations[:-1]))
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
    assert spec.max_episode_steps == 3  # the sorted letters: the reset shows the prompt


def _score(env: TextTaskEnv, scores_at, seed: int = 0):
    """Plays ``scoring=likelihood``: ``scores_at(place, target)`` gives each answer place's
    scores; returns the observations, the contexts fed and the last reward."""
    observation, _ = env.reset(seed=seed)
    contexts, done, place = [observation], False, 0
    while not done:
        target = env._targets[place]
        observation, reward, done, _, _ = env.step(scores_at(place, target))
        contexts.append(observation)
        place += 1
    return contexts, reward


def test_likelihood_scoring_feeds_the_answer_and_rewards_its_probability():
    env = TextTaskEnv("addition", digits=2, scoring="likelihood")
    vocabulary = env.tokenizer.vocabulary
    assert env.action_space.shape == (vocabulary,)

    def peaked(token):
        scores = np.full(vocabulary, -1.0, np.float32)
        scores[token] = 1.0
        return scores

    contexts, reward = _score(env, lambda place, target: peaked(target), seed=4)
    answer, prompt = env.problem.answer, env.tokenizer.encode(env.problem.prompt)
    assert reward == 1.0 and env.completion == answer
    assert env.tokenizer.decode(contexts[-1][len(prompt) :].astype(int) - 1) == answer
    # Uniform scores: each token of the answer (and its end) gets 1 / vocabulary.
    _, reward = _score(env, lambda place, target: np.zeros(vocabulary, np.float32), seed=4)
    assert reward == pytest.approx(0.9 / vocabulary)
    # The first place scored wrong: the answer is still what the next places read, and the
    # last observation shows what greedy decoding writes (the wrong token, then the rest).
    wrong = (env._targets[0] % (vocabulary - 1)) + 1  # a character, not the end, not the target
    contexts, reward = _score(
        env, lambda place, target: peaked(wrong if place == 0 else target), seed=4
    )
    fed = contexts[-2][len(prompt) : len(prompt) + len(answer)]
    assert env.tokenizer.decode(fed[fed > 0].astype(int) - 1) == answer[: len(fed[fed > 0])]
    assert env.completion == env.tokenizer.decode([wrong]) + answer[1:]
    expected = 1.0 / (1.0 + (vocabulary - 1) * np.exp(-20.0))  # the places scored right
    wrong_share = np.exp(-20.0) / (1.0 + (vocabulary - 1) * np.exp(-20.0))
    places = len(env._targets)
    assert reward == pytest.approx(0.9 * (wrong_share + (places - 1) * expected) / places)


def test_an_unknown_scoring_is_named():
    with pytest.raises(ConfigError, match=r"env.kwargs.scoring: unknown scoring 'logprob'"):
        TextTaskEnv("addition", scoring="logprob")


def test_a_likelihood_scored_task_is_a_text_env_a_causal_lm_reads():
    from neuroplug.nets.causal_lm import observes_token_ids

    config = EnvConfig(
        id="neuroplug.envs.text.registration:Sorting-v0",
        kwargs={"length": 3, "scoring": "likelihood"},
        vectorization="in_process",
    )
    spec = make_spec(config)
    assert not spec.discrete and spec.num_actions == 12 and observes_token_ids(spec)
