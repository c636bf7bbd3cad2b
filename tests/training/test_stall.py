"""A stalled search says so once: every member scoring the same, or a zero update, for
several generations in a row."""

from __future__ import annotations

import numpy as np

from neuroplug.training.stall import PATIENCE, StallWatch


class _ES:
    name = "es"
    sigma = 0.02


class _SNES:
    name = "snes"
    sigma_init = 0.1


def _flat(watch, generations, first=1, **stats):
    said = []
    for generation in range(first, first + generations):
        line = watch.observe(generation, np.full(8, 9.0), stats, by_behavior=False)
        said += [line] if line else []
    return said


def test_equal_fitness_for_several_generations_is_said_once_with_the_settings_that_help():
    watch = StallWatch(_ES())
    said = _flat(watch, PATIENCE * 3)
    assert len(said) == 1
    assert f"generations 1-{PATIENCE}: every member scored 9" in said[0]
    assert "a larger algo.sigma (now 0.02)" in said[0]
    assert "algo=snes" in said[0]


def test_a_strategy_that_adapts_its_step_size_is_not_told_to_use_one():
    said = _flat(StallWatch(_SNES()), PATIENCE)
    assert "algo.sigma_init (now 0.1)" in said[0] and "algo=snes" not in said[0]


def test_signal_in_between_resets_the_count_and_a_new_stall_is_said_again():
    watch = StallWatch(_ES())
    assert not _flat(watch, PATIENCE - 1)
    assert watch.observe(PATIENCE, np.arange(8.0), {}, by_behavior=False) is None
    assert len(_flat(watch, PATIENCE, first=PATIENCE + 1)) == 1
    assert watch.observe(20, np.arange(8.0), {}, by_behavior=False) is None
    assert len(_flat(watch, PATIENCE, first=21)) == 1


def test_a_zero_update_counts_and_a_behavior_driven_search_is_not_stalled_by_equal_scores():
    watch = StallWatch(_ES())
    for generation in range(1, PATIENCE + 2):
        assert watch.observe(generation, np.full(8, 9.0), {}, by_behavior=True) is None
    said = [
        watch.observe(generation, np.arange(8.0), {"gradient_norm": 0.0}, by_behavior=True)
        for generation in range(1, PATIENCE + 1)
    ]
    assert said[-1] is not None and "the update was zero" in said[-1]


def test_an_es_run_whose_members_all_act_alike_says_it_has_stalled(compose, tmp_path, capsys):
    from neuroplug.app import run_job

    # sigma 1e-9 cannot flip any action of CartPole's argmax policy: every member plays
    # the very same games.
    run_job(
        compose(
            [
                "algo=es",
                "env=cartpole",
                "logger=console",
                "algo.population_size=8",
                "algo.sigma=1e-9",
                "net.hidden_sizes=[8]",
                "run.eval_episodes=1",
                "run.eval_interval=0",
                f"run.max_generations={PATIENCE + 1}",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    output = capsys.readouterr()
    text = output.out + output.err
    assert text.count("so the search has nothing to follow") == 1, text[-3000:]
    assert "a larger algo.sigma (now 1e-09)" in text
