"""The feet-contact wrapper on gymnasium's MuJoCo walkers."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

from neuroplug.envs.feet_contact import FeetContactRates

pytest.importorskip("mujoco")


def _rates_after(env: gymnasium.Env, actions) -> tuple[dict, int]:
    env.reset(seed=0)
    steps = 0
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            break
    return {key: value for key, value in info.items() if key.startswith("foot_contact_")}, steps


@pytest.mark.parametrize(
    ("env_id", "feet"), [("Walker2d-v5", 2), ("HalfCheetah-v5", 2), ("Hopper-v5", 1), ("Ant-v5", 4)]
)
def test_each_walker_reports_a_rate_per_foot(env_id, feet):
    env = FeetContactRates(gymnasium.make(env_id))
    env.action_space.seed(0)
    rates, steps = _rates_after(env, (env.action_space.sample() for _ in range(40)))
    assert sorted(rates) == [f"foot_contact_{k}" for k in range(feet)]
    for rate in rates.values():
        assert 0.0 <= rate <= 1.0
        assert abs(rate * steps - round(rate * steps)) < 1e-9  # a count of steps


def test_a_walker_standing_still_keeps_its_feet_down_and_one_in_the_air_does_not():
    env = FeetContactRates(gymnasium.make("Walker2d-v5"))
    standing, _ = _rates_after(env, [np.zeros(6)] * 30)
    assert min(standing.values()) > 0.5
    # Lifted 1 m off the floor at reset, the feet touch nothing for the first steps.
    env.reset(seed=0)
    data = env.unwrapped.data
    data.qpos[1] += 1.0
    _, _, _, _, info = env.step(np.zeros(6))
    assert info["foot_contact_0"] == info["foot_contact_1"] == 0.0


def test_a_reset_starts_the_counts_again():
    env = FeetContactRates(gymnasium.make("Hopper-v5"))
    _rates_after(env, [np.zeros(3)] * 10)
    _, info = env.reset(seed=1)
    assert info["foot_contact_0"] == 0.0 and env.steps == 0


def test_an_unknown_model_asks_for_its_feet_and_a_wrong_name_is_refused():
    with pytest.raises(ValueError, match="feet="):
        FeetContactRates(gymnasium.make("Swimmer-v5"))
    with pytest.raises(ValueError, match="no geom 'paw'"):
        FeetContactRates(gymnasium.make("Walker2d-v5"), feet=["paw"])
