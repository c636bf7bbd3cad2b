"""Text tasks: prompts drawn from a seed, rewards that verify completions, tasks found by
name or by ``module:Class``, bad settings named."""

from __future__ import annotations

import numpy as np
import pytest

from neuroplug.envs.text.countdown import Countdown
from neuroplug.envs.text.task import make_task, task_names
from neuroplug.errors import ConfigError


def test_the_built_in_tasks_are_named_by_their_entry_points():
    assert {"addition", "sorting", "countdown"} <= set(task_names())


@pytest.mark.parametrize("name", ["addition", "sorting", "countdown"])
def test_a_task_s_own_answer_earns_the_full_reward_and_fits_its_bounds(name):
    task = make_task(name, {})
    rng = np.random.default_rng(0)
    for _ in range(200):
        problem = task.sample(rng)
        assert task.reward(problem, problem.answer) == 1.0
        assert task.correct(problem, problem.answer)
        assert len(problem.prompt) <= task.max_prompt_length
        assert len(problem.answer) <= task.max_new_tokens
        assert set(problem.prompt + problem.answer) <= set(task.alphabet)
        assert task.reward(problem, "") < 1.0


def test_prompts_are_the_seed_s():
    task = make_task("addition", {"digits": 4})
    first = [task.sample(np.random.default_rng(7)).prompt for _ in range(3)]
    again = [task.sample(np.random.default_rng(7)).prompt for _ in range(3)]
    assert first == again
    assert task.sample(np.random.default_rng(8)).prompt != first[0]


def test_addition_gives_partial_credit_per_digit_in_place_unless_exact():
    shaped = make_task("addition", {"digits": 3})
    exact = make_task("addition", {"digits": 3, "shaping": "exact"})
    problem = shaped.sample(np.random.default_rng(1))
    wrong_last = problem.answer[:-1] + str((int(problem.answer[-1]) + 1) % 10)
    assert 0.0 < shaped.reward(problem, wrong_last) < 1.0
    assert exact.reward(problem, wrong_last) == 0.0
    assert shaped.reward(problem, wrong_last) > shaped.reward(problem, wrong_last[::-1] + "9")


def test_countdown_verifies_any_expression_over_each_number_once():
    task = Countdown(numbers=3)
    problem = task.sample(np.random.default_rng(0))
    values, target = problem.data
    a, b, c = values
    assert task.reward(problem, problem.answer) == 1.0
    # another expression of the same value counts; so does a different bracketing
    assert task.correct(problem, f"({problem.answer})")
    assert task.reward(problem, f"{a}+{b}") == task.format_reward  # a number left out
    assert task.reward(problem, f"{a}+{b}+{c}+{a}") == task.format_reward  # one used twice
    assert task.reward(problem, f"{a}+*{b}") == 0.0  # not an expression
    assert task.reward(problem, f"{a}/(0*{b})+{c}") in (0.0, task.format_reward)  # no crash
    exact = Countdown(numbers=2)
    from neuroplug.envs.text.task import Problem

    assert exact.correct(Problem("6,4=24:", "6*4", ((6, 4), 24)), "4*6")
    assert exact.correct(Problem("6,4=24:", "6*4", ((6, 4), 24)), "(4)*(6)")
    assert not exact.correct(Problem("6,3=2:", "6/3", ((6, 3), 2)), "3/6")


def test_an_unknown_task_or_setting_is_named():
    with pytest.raises(
        ConfigError, match=r"env.kwargs.task: no text task named 'adition'.*addition"
    ):
        make_task("adition", {})
    with pytest.raises(ConfigError, match=r"env.kwargs: the sorting task refused \['digits'\]"):
        make_task("sorting", {"digits": 3})
    with pytest.raises(ConfigError, match=r"env.kwargs.shaping: unknown shaping 'dense'"):
        make_task("addition", {"shaping": "dense"})
    with pytest.raises(ConfigError, match=r"env.kwargs.task: .* is .*a subclass of neuroplug's"):
        make_task("neuroplug.envs.text.tokenizer:CharTokenizer", {})


def test_a_user_s_own_task_is_found_by_module_and_class():
    task = make_task("text_tasks_for_tests:Reverse", {"length": 4})
    problem = task.sample(np.random.default_rng(0))
    assert task.reward(problem, problem.prompt[:-1][::-1]) == 1.0
