"""Every shipped ``+experiment=`` preset composes into a valid run of the plugin it names."""

from __future__ import annotations

import pytest

from neuroplug.config.paths import conf_dir
from neuroplug.experiment import typed_experiment

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
