"""The re-evaluation settings of map_elites and cma_mae: a bad value is refused in one line
naming the field and what is allowed, by the config alone, without importing torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from neuroplug.errors import ConfigError
from neuroplug.evolution.archive_config import ReevaluationConfig


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"reevaluate_every": 0}, "algo.reevaluate_every"),
        ({"reevaluate_every": -2}, "algo.reevaluate_every"),
        ({"reevaluation_episodes": -1}, "algo.reevaluation_episodes"),
    ],
)
def test_a_bad_reevaluation_setting_is_refused_naming_the_field(settings, field):
    with pytest.raises(ConfigError) as raised:
        ReevaluationConfig(name="map_elites", **settings)
    assert raised.value.field == field
    message = str(raised.value)
    assert message.startswith(f"{field}: got {next(iter(settings.values()))} (allowed: ")
    assert "\n" not in message


def test_off_automatic_and_every_n_are_accepted():
    assert not ReevaluationConfig(name="map_elites", reevaluation_episodes=0).reevaluates
    assert ReevaluationConfig(name="map_elites").reevaluate_every is None
    assert ReevaluationConfig(name="map_elites", reevaluate_every=1).reevaluates


def test_the_settings_are_checked_without_torch():
    probe = (
        "import sys\n"
        "from neuroplug_algorithms.map_elites_config import MAPElitesConfig\n"
        "from neuroplug_algorithms.cma_mae_config import CMAMAEConfig\n"
        "for config in (MAPElitesConfig, CMAMAEConfig):\n"
        "    try:\n"
        "        config(name='qd', reevaluate_every=0)\n"
        "    except ValueError as error:\n"
        "        print(error)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "False", done.stdout + done.stderr
    assert [line.split(":")[0] for line in lines[:-1]] == ["algo.reevaluate_every"] * 2
