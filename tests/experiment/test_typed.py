"""Every shipped ``+experiment=`` preset composes into a valid run of the plugin it names."""

from __future__ import annotations

import pytest

from neuroplug.config.paths import conf_dir
from neuroplug.experiment.typed import typed_experiment

PRESETS = sorted(path.stem for path in (conf_dir() / "experiment").glob("*.yaml"))


def test_presets_are_shipped():
    assert {"dqn_cartpole", "dqn_atari", "ppo_cartpole"} <= set(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_preset_composes_into_a_typed_experiment(compose, preset):
    experiment = typed_experiment(compose([f"+experiment={preset}"]))
    assert experiment.algo.name == preset.split("_")[0]
    # A preset's settings win over the group defaults it overrides.
    assert experiment.run.max_frames is not None


def test_the_atari_preset_trains_on_clipped_rewards_and_lives(compose):
    experiment = typed_experiment(compose(["+experiment=dqn_atari", "env=breakout"]))
    assert experiment.algo.reward_clip and experiment.algo.episodic_life
    assert experiment.net.type == "nature_cnn"
    assert experiment.env.task_id == "Breakout-v5"


def test_a_budget_in_the_other_families_unit_is_refused_for_a_command_not_a_record(compose):
    from neuroplug.errors import ConfigError
    from neuroplug.experiment.typed import Experiment, check_budget_unit

    # A learner's checkpoint written before run.max_segments existed still reads back...
    record = typed_experiment(compose(["algo=ppo", "env=cartpole", "run.max_segments=3"]))
    old = record.to_yaml().replace("max_generations: null", "max_generations: 3")
    assert Experiment.from_yaml(old).run.max_generations == 3
    # ...but a command that gives a learner generations is told the unit to use.
    with pytest.raises(ConfigError, match=r"run.max_segments=3"):
        check_budget_unit(Experiment.from_yaml(old))
    check_budget_unit(record)
