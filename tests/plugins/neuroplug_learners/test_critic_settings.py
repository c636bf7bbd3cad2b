"""The replay learners' critic settings: each out-of-range value refused naming its field,
for the learners (td3) and the cooperation methods (cem_rl) alike."""

from __future__ import annotations

import pytest
from neuroplug_learners.hybrids.cem_rl_config import CEMRLConfig
from neuroplug_learners.td3_config import TD3Config

from neuroplug.errors import ConfigError
from neuroplug.testing import resolved_settings


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"learning_starts": -1}, "learning_starts"),
        ({"gamma": 1.5}, "gamma"),
        ({"tau": 0.0}, "tau"),
        ({"critic_hidden": []}, "critic_hidden"),
        ({"critic_hidden": [64, 0]}, "critic_hidden"),
    ],
)
def test_a_critic_setting_out_of_range_is_refused_naming_its_field(settings, field):
    with pytest.raises(ConfigError, match=f"algo.{field}: got"):
        resolved_settings(TD3Config(name="td3", **settings), "Pendulum-v1")
    with pytest.raises(ConfigError, match=f"algo.{field}: got"):
        CEMRLConfig(name="cem_rl", **settings)
